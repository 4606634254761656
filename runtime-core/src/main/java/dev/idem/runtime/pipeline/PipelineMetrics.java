package dev.idem.runtime.pipeline;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

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

    final Counter processed;
    final Counter duplicate;
    final Counter failed;
    final Counter retried;
    final Counter deadLettered;
    final Counter deferred;
    final Counter fingerprintMismatch;
    /** Handler ran but its completion could not be written: the honest window, made visible. */
    final Counter commitFailed;
    /** Another consumer took the key over while this one still ran the handler. */
    final Counter leaseLost;
    /** Runs with no claim: the message had no usable key and the policy is {@code unprotected}. */
    final Counter unprotected;
    /** Deliveries handed back because the store could not answer. */
    final Counter storeUnavailable;
    final Timer handler;
    final Timer claim;
    final Timer complete;
    final Timer release;
    final Timer renew;

    PipelineMetrics(MeterRegistry registry, String pipeline) {
        processed = outcome(registry, pipeline, "processed");
        duplicate = outcome(registry, pipeline, "duplicate");
        failed = outcome(registry, pipeline, "failed");
        retried = outcome(registry, pipeline, "retried");
        deadLettered = outcome(registry, pipeline, "dead-lettered");
        deferred = outcome(registry, pipeline, "deferred");
        fingerprintMismatch = outcome(registry, pipeline, "fingerprint-mismatch");
        commitFailed = outcome(registry, pipeline, "commit-failed");
        leaseLost = outcome(registry, pipeline, "lease-lost");
        unprotected = outcome(registry, pipeline, "unprotected");
        storeUnavailable = outcome(registry, pipeline, "store-unavailable");
        handler = Timer.builder(HANDLER_DURATION).description("Handler run time")
                .tag("pipeline", pipeline).register(registry);
        claim = store(registry, pipeline, "claim");
        complete = store(registry, pipeline, "complete");
        release = store(registry, pipeline, "release");
        renew = store(registry, pipeline, "renew");
    }

    private static Counter outcome(MeterRegistry registry, String pipeline, String outcome) {
        return Counter.builder(MESSAGES).description("Messages by outcome")
                .tag("pipeline", pipeline).tag("outcome", outcome).register(registry);
    }

    private static Timer store(MeterRegistry registry, String pipeline, String operation) {
        return Timer.builder(STORE_DURATION).description("Dedup store call time")
                .tag("pipeline", pipeline).tag("operation", operation).register(registry);
    }
}
