package dev.idem.handlertest;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One pass of a crash test: the point it kills at, which messages it killed there already (each once), and what the
 * runs of the pass looked like (the steps and effects of each message's last run that returned), for the reference
 * pass to name the crash points. Thread-safe: the runtime's workers report here.
 */
final class Pass {

    final CrashPoint point;
    final boolean transactional;
    private final Set<String> crashed = ConcurrentHashMap.newKeySet();
    /** Per message, the names of the steps and of the effects of its last run that returned, in order. */
    final Map<String, List<String>> steps = new ConcurrentHashMap<>();
    final Map<String, List<String>> effects = new ConcurrentHashMap<>();

    Pass(CrashPoint point, boolean transactional) {
        this.point = point;
        this.transactional = transactional;
    }

    /** How many messages this pass killed. */
    int crashes() {
        return crashed.size();
    }

    /**
     * A run of message {@code key} reached {@code kind} (its {@code ordinal}-th effect or step): when this pass kills
     * there and has not killed that message yet, it kills the incarnation and stops the run.
     *
     * @throws SimulatedCrash when it kills
     */
    void reached(Incarnation incarnation, CrashPoint.Kind kind, int ordinal, String key) {
        if (key != null && hits(kind, ordinal) && crashed.add(key)) {
            incarnation.kill();
            throw new SimulatedCrash(point.label() + " of message '" + key + "'");
        }
    }

    /**
     * Before a completion of these keys reaches the store: kills the incarnation if this pass kills before the
     * completion and one of them was not killed there yet (every such key of the batch counts as killed, as a
     * {@code kill -9} loses the whole batch).
     *
     * @return whether it killed
     */
    boolean beforeCompletion(Incarnation incarnation, List<String> keys) {
        if (!hits(CrashPoint.Kind.BEFORE_COMPLETION, 0)) {
            return false;
        }
        boolean any = false;
        for (String key : keys) {
            any |= crashed.add(key);
        }
        if (any) {
            incarnation.kill();
        }
        return any;
    }

    private boolean hits(CrashPoint.Kind kind, int ordinal) {
        return point.kind() == kind && point.ordinal() == ordinal;
    }

    /** A run that returned: its shape is the message's, for naming the points. */
    void returned(Run run) {
        if (run.key != null) {
            steps.put(run.key, List.copyOf(run.stepNames));
            effects.put(run.key, List.copyOf(run.effectNames));
        }
    }

    /** One handler run of the pass: counts its steps and effects, and kills where the pass says. */
    static final class Run implements EffectRecorder.Run {
        final Pass pass;
        final Incarnation incarnation;
        final String key;
        final List<String> stepNames = new ArrayList<>();
        final List<String> effectNames = new ArrayList<>();

        Run(Pass pass, Incarnation incarnation, String key) {
            this.pass = pass;
            this.incarnation = incarnation;
            this.key = key;
        }

        @Override
        public String messageKey() {
            return key == null ? "(no key)" : key;
        }

        @Override
        public int nextEffect() {
            return effectNames.size() + 1;
        }

        @Override
        public void effect(String effect, int nth) {
            effectNames.add(effect);
            pass.reached(incarnation, CrashPoint.Kind.AFTER_EFFECT, nth, key);
        }

        void step(String name) {
            stepNames.add(name);
            pass.reached(incarnation, CrashPoint.Kind.AFTER_STEP, stepNames.size(), key);
        }
    }
}
