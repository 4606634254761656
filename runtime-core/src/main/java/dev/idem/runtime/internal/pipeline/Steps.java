package dev.idem.runtime.internal.pipeline;

import dev.idem.api.NonRetryableException;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.runtime.internal.plugin.PluginContext;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreException;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * The durable steps of handler runs ({@code HandlerContext.step}): a step whose result the claim's steps hold is
 * replayed; any other runs its action, and its result is recorded in the store ({@link StoreCalls#recordStep}, fenced
 * by the claim's token) before the handler goes on. See docs/design.md, "Durable steps".
 *
 * <p>What the store holds for a claim is read once, at the first step of the first run that asks, and kept on the
 * work ({@link Recorded}) with what this process records since, so an in-process retry replays without a store call.
 * A store that says the claim is no longer this process's ends the run with {@link ClaimLostException}: another
 * consumer owns the key now and decides its outcome. A message run without a claim runs its steps unrecorded.
 *
 * <p>Built once per pipeline; thread-safe. A work's steps are used by the worker running it only.
 */
final class Steps {

    /** A step's outcome, as traced. */
    static final String RECORDED = "recorded";
    static final String REPLAYED = "replayed";
    static final String UNRECORDED = "unrecorded";

    private final PipelineState s;
    private final StoreCalls store;
    private final PipelineMetrics metrics;
    /** {@code null} when the store keeps no steps; a step then fails at its first use. */
    private final StepStore stepStore;
    private final String storeName;
    private final StepCodec codec;
    private final int maxSize;

    Steps(PipelineState state, StoreCalls store, PipelineMetrics metrics) {
        this.s = state;
        this.store = store;
        this.metrics = metrics;
        DedupStore dedupStore = store.store();
        this.stepStore = dedupStore instanceof StepStore steps ? steps : null;
        this.storeName = PluginContext.unwrap(dedupStore).getClass().getName();
        this.codec = new StepCodec(state.handler);
        this.maxSize = state.config.get(RuntimeConfigSpecs.STEPS_MAX_SIZE);
    }

    /** The steps as one run of {@code w} sees them, for its handler context. */
    Bound of(Work w) {
        return new Bound(w);
    }

    /** The steps of one run, bound to its work. */
    final class Bound {
        private final Work w;

        private Bound(Work w) {
            this.w = w;
        }

        <T> T step(String name, Class<T> type, Callable<T> action) throws Exception {
            return run(w, name, type, action);
        }
    }

    /**
     * What this process knows of a claim's steps: those the store held when first asked, and those recorded since.
     * Written by the worker running the work.
     */
    static final class Recorded {
        final long token;
        final Map<String, byte[]> byName;

        Recorded(long token, Map<String, byte[]> byName) {
            this.token = token;
            this.byName = byName;
        }
    }

    <T> T run(Work w, String name, Class<T> type, Callable<T> action) throws Exception {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(action, "action");
        StepStore.check(name, null);
        if (w.storeKey == null || !w.claim.held()) {
            T result = action.call();
            ran(w, name, UNRECORDED);
            return result;
        }
        if (stepStore == null) {
            throw new UnsupportedOperationException("Pipeline '" + s.name + "': step '" + name + "' cannot be"
                    + " recorded: the dedup store " + storeName + " keeps no steps (it does not implement"
                    + " dev.idem.spi.StepStore). Use a store that does (store.type: caffeine, redis or jdbc), or do"
                    + " without context.step");
        }
        Map<String, byte[]> known = recorded(w);
        byte[] value = known.get(name);
        if (value != null) {
            T result = codec.decode(value, type, name);
            metrics.stepsReplayed.increment();
            s.tracing.step(w, name, REPLAYED);
            return result;
        }
        T result = action.call();
        byte[] encoded = codec.encode(result, name);
        if (encoded.length > maxSize) {
            throw new NonRetryableException("Step '" + name + "' ran, but its result is " + encoded.length
                    + " bytes once encoded, more than pipelines." + s.name + ".steps.max-size (" + maxSize
                    + "), so it was not recorded and a later run would run it again. Return less (the ID a re-run"
                    + " needs rather than a whole response) or raise steps.max-size");
        }
        if (!store.recordStep(w, name, encoded)) {
            throw lost(w, name);
        }
        known.put(name, encoded);
        ran(w, name, RECORDED);
        return result;
    }

    private void ran(Work w, String name, String outcome) {
        metrics.stepsRan.increment();
        s.tracing.step(w, name, outcome);
    }

    /** The claim's steps, read from the store at the claim's first step. */
    private Map<String, byte[]> recorded(Work w) {
        long token = w.claim.token();
        Recorded known = w.steps;
        if (known != null && known.token == token) {
            return known.byName;
        }
        if (w.claim.leaseLost()) {
            throw lost(w, null);
        }
        Optional<Map<String, byte[]>> stored = store.steps(w);
        if (stored.isEmpty()) {
            throw lost(w, null);
        }
        w.steps = new Recorded(token, new HashMap<>(stored.get()));
        return w.steps.byName;
    }

    private ClaimLostException lost(Work w, String step) {
        w.claim.leaseTakenOver();
        return new ClaimLostException("Pipeline '" + s.name + "': " + w.describe() + " is no longer this consumer's"
                + " (its lease ran out and another consumer took the key over)"
                + (step == null ? "" : "; step '" + step + "' ran but was not recorded")
                + ". This run stops; the new owner decides the message's outcome");
    }

    /** A step found that the work's claim is another consumer's now. */
    static final class ClaimLostException extends StoreException {
        private static final long serialVersionUID = 1L;

        ClaimLostException(String message) {
            super(message, false);
        }
    }
}
