package dev.idem.handlertest;

import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the effects a handler has on the world outside the store, per message: what a crash test compares between
 * a run without crashes and runs killed at every point. The handler's fake of the outside service calls
 * {@link #record(String)} each time the effect really happens (a charge applied, a row inserted, an e-mail sent):
 *
 * <pre>{@code
 * EffectRecorder effects = new EffectRecorder();
 * FakePayments payments = new FakePayments(effects);   // calls effects.record("charge") per charge it applies
 * CrashReport report = CrashTest.of(new OrderHandler(payments)).effects(effects).messages(orders).run();
 * }</pre>
 *
 * <p>A fake that deduplicates calls by a key (as a payment API honours {@code Idempotency-Key}) records only the
 * calls it applies. An effect is counted for the message whose handler runs on the calling thread; a call from
 * another thread names the message's idempotency key ({@link #record(String, String)}). During a crash test a call
 * may also be where the test kills the run ("after effect 1"), by throwing from here, as a {@code kill -9} right
 * after the effect would.
 *
 * <p>Effects that roll back with the handler's transaction (its SQL in transactional mode) must not be recorded
 * here, where they would count though rolled back: observe them after each pass instead
 * ({@link CrashTest#observe(CrashTest.Observer)}).
 *
 * <p>Thread-safe. Outside a crash test it simply counts, for a test's own assertions.
 */
public final class EffectRecorder {

    /** The message whose handler runs on this thread, during a crash test. */
    static final ThreadLocal<Run> CURRENT = new ThreadLocal<>();

    private final Map<String, Map<String, AtomicInteger>> counts = new ConcurrentHashMap<>();

    /** What a handler run of a crash test tells the recorder: whose effects these are, and where to crash. */
    interface Run {
        String messageKey();

        /** The run had its {@code nth} effect (from 1): the test may kill it here. */
        void effect(String effect, int nth);

        int nextEffect();
    }

    /**
     * Counts one occurrence of {@code effect} for the message whose handler runs on this thread.
     *
     * @throws IllegalStateException if no handler of a crash test runs on this thread: use
     *         {@link #record(String, String)}
     */
    public void record(String effect) {
        Objects.requireNonNull(effect, "effect");
        Run run = CURRENT.get();
        if (run == null) {
            throw new IllegalStateException("EffectRecorder.record(\"" + effect + "\") was called where no handler of"
                    + " a crash test runs on the thread; name the message: record(effect, messageKey)");
        }
        increment(run.messageKey(), effect);
        run.effect(effect, run.nextEffect());
    }

    /** Counts one occurrence of {@code effect} for the message with this idempotency key. */
    public void record(String effect, String messageKey) {
        Objects.requireNonNull(effect, "effect");
        Objects.requireNonNull(messageKey, "messageKey");
        Run run = CURRENT.get();
        increment(messageKey, effect);
        if (run != null && run.messageKey().equals(messageKey)) {
            run.effect(effect, run.nextEffect());
        }
    }

    /** How often {@code effect} was recorded for the message with this key. */
    public int count(String messageKey, String effect) {
        Map<String, AtomicInteger> of = counts.get(messageKey);
        AtomicInteger n = of == null ? null : of.get(effect);
        return n == null ? 0 : n.get();
    }

    /** Every message's effects and how often each was recorded, sorted. */
    public Map<String, Map<String, Integer>> counts() {
        Map<String, Map<String, Integer>> out = new TreeMap<>();
        counts.forEach((key, effects) -> {
            Map<String, Integer> of = new TreeMap<>();
            effects.forEach((effect, n) -> of.put(effect, n.get()));
            out.put(key, of);
        });
        return out;
    }

    /** Forgets every count; the crash test does it before each pass. */
    public void reset() {
        counts.clear();
    }

    private void increment(String messageKey, String effect) {
        counts.computeIfAbsent(messageKey, k -> new ConcurrentHashMap<>())
                .computeIfAbsent(effect, e -> new AtomicInteger()).incrementAndGet();
    }
}
