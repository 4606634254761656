package dev.idem.runtime.pipeline;

import dev.idem.runtime.OutcomeListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The meters of one pipeline, created once so the hot path only increments.
 *
 * <p>{@code idem.messages{pipeline, outcome}} counts outcomes; {@code idem.handler.duration{pipeline}}
 * times handler runs; {@code idem.store.duration{pipeline, operation}} times store calls.
 */
final class PipelineMetrics {

    static final String MESSAGES = "idem.messages";
    static final String HANDLER_DURATION = "idem.handler.duration";
    static final String STORE_DURATION = "idem.store.duration";
    static final String EMITTED = "idem.emitted";
    static final String BACKLOG = "idem.backlog";
    static final String IN_FLIGHT = "idem.inflight";
    static final String OLDEST_IN_FLIGHT = "idem.inflight.oldest.age";
    /** One debug line per outcome, for following single messages. */
    private static final Logger OUTCOMES = LoggerFactory.getLogger("idem.outcome");

    /** An outcome's counter, plus its debug line. */
    static final class Outcome {
        private final Counter counter;
        private final String pipeline;
        private final String name;
        private final OutcomeListener listener;

        Outcome(MeterRegistry registry, String pipeline, String name, OutcomeListener listener) {
            this.counter = Counter.builder(MESSAGES).description("Messages by outcome")
                    .tag("pipeline", pipeline).tag("outcome", name).register(registry);
            this.pipeline = pipeline;
            this.name = name;
            this.listener = listener;
        }

        long total() {
            return (long) counter.count();
        }

        /** Counts a batch that failed as a whole, without a line per message. */
        void count(int messages) {
            counter.increment(messages);
        }

        void count(Work w) {
            counter.increment();
            w.outcome = name;
            if (OUTCOMES.isDebugEnabled()) {
                OUTCOMES.debug("Pipeline '{}': {} {}", pipeline, name, w.describe());
            }
            if (listener != null) {
                try {
                    listener.onOutcome(pipeline, name, w.message, w.key);
                } catch (RuntimeException e) {
                    OUTCOMES.warn("Outcome listener {} failed; ignored", listener, e);
                }
            }
        }
    }

    final Outcome processed;
    final Outcome duplicate;
    final Outcome failed;
    final Outcome retried;
    final Outcome deadLettered;
    final Outcome deferred;
    final Outcome fingerprintMismatch;
    /** Handler ran but its completion could not be written: the honest window, made visible. */
    final Outcome commitFailed;
    /** Another consumer took the key over while this one still ran the handler. */
    final Outcome leaseLost;
    /** Runs with no claim: the message had no usable key and the policy is {@code unprotected}. */
    final Outcome unprotected;
    /** Deliveries handed back because the store could not answer. */
    final Outcome storeUnavailable;
    /** Events numbered at or below their aggregate's watermark: acked, not run. */
    final Outcome stale;
    /** Events that had to wait for the numbers before them (counted once each, whatever came of it). */
    final Outcome gapWaited;
    /** Runs that ended with {@code RejectedException}: acked, not retried. */
    final Outcome rejected;
    /** Handler runs repeated at once after an optimistic update lost a race. */
    final Outcome conflictRetried;
    /** Messages handlers emitted: published in plain mode, written to the outbox in transactional mode. */
    final Counter emitted;
    final Timer handler;
    final Timer claim;
    final Timer complete;
    final Timer release;
    final Timer renew;

    private final MeterRegistry registry;
    private final String pipeline;
    private io.micrometer.core.instrument.MultiGauge backlog;

    /**
     * Registers the gauges of a running pipeline: {@code idem.inflight} (deliveries held unsettled),
     * {@code idem.inflight.oldest.age} (seconds since the oldest of them was dispatched to the workers; 0 when
     * none) and {@code idem.backlog{partition}} (what the broker still holds, see {@link #backlog}).
     */
    void watch(PipelineState s) {
        io.micrometer.core.instrument.Gauge.builder(IN_FLIGHT, s, st -> st.limit.inFlight())
                .description("Deliveries held unsettled").tag("pipeline", pipeline).register(registry);
        io.micrometer.core.instrument.Gauge.builder(OLDEST_IN_FLIGHT, s, PipelineMetrics::oldestInFlightSeconds)
                .description("Seconds since the oldest unsettled delivery was dispatched").baseUnit("seconds")
                .tag("pipeline", pipeline).register(registry);
        backlog = io.micrometer.core.instrument.MultiGauge.builder(BACKLOG)
                .description("Messages the broker holds for the pipeline, not yet acknowledged: end minus committed"
                        + " offset per Kafka partition, ready messages per queue")
                .tag("pipeline", pipeline).register(registry);
    }

    private static double oldestInFlightSeconds(PipelineState s) {
        long oldest = Long.MAX_VALUE;
        for (Batch b : s.tracked) {
            oldest = Math.min(oldest, b.dispatchedAt);
        }
        return oldest == Long.MAX_VALUE ? 0 : Math.max(0, s.now() - oldest) / 1e9;
    }

    /** Publishes the subscription's latest backlog figures, one row per partition or queue. */
    void backlog(java.util.Map<String, Long> figures) {
        io.micrometer.core.instrument.MultiGauge gauge = backlog;
        if (gauge == null) {
            return;
        }
        java.util.List<io.micrometer.core.instrument.MultiGauge.Row<?>> rows = new java.util.ArrayList<>();
        figures.forEach((partition, n) -> rows.add(io.micrometer.core.instrument.MultiGauge.Row.of(
                io.micrometer.core.instrument.Tags.of("partition", partition), n)));
        gauge.register(rows, true);
    }

    PipelineMetrics(MeterRegistry registry, String pipeline, OutcomeListener listener) {
        this.registry = registry;
        this.pipeline = pipeline;
        processed = new Outcome(registry, pipeline, "processed", listener);
        duplicate = new Outcome(registry, pipeline, "duplicate", listener);
        failed = new Outcome(registry, pipeline, "failed", listener);
        retried = new Outcome(registry, pipeline, "retried", listener);
        deadLettered = new Outcome(registry, pipeline, "dead-lettered", listener);
        deferred = new Outcome(registry, pipeline, "deferred", listener);
        fingerprintMismatch = new Outcome(registry, pipeline, "fingerprint-mismatch", listener);
        commitFailed = new Outcome(registry, pipeline, "commit-failed", listener);
        leaseLost = new Outcome(registry, pipeline, "lease-lost", listener);
        unprotected = new Outcome(registry, pipeline, "unprotected", listener);
        storeUnavailable = new Outcome(registry, pipeline, "store-unavailable", listener);
        stale = new Outcome(registry, pipeline, "stale", listener);
        gapWaited = new Outcome(registry, pipeline, "gap-waited", listener);
        rejected = new Outcome(registry, pipeline, "rejected", listener);
        conflictRetried = new Outcome(registry, pipeline, "conflict-retried", listener);
        emitted = Counter.builder(EMITTED).description("Messages emitted by handlers")
                .tag("pipeline", pipeline).register(registry);
        handler = Timer.builder(HANDLER_DURATION).description("Handler run time")
                .tag("pipeline", pipeline).register(registry);
        claim = store(registry, pipeline, "claim");
        complete = store(registry, pipeline, "complete");
        release = store(registry, pipeline, "release");
        renew = store(registry, pipeline, "renew");
    }

    private static Timer store(MeterRegistry registry, String pipeline, String operation) {
        return Timer.builder(STORE_DURATION).description("Dedup store call time")
                .tag("pipeline", pipeline).tag("operation", operation).register(registry);
    }
}
