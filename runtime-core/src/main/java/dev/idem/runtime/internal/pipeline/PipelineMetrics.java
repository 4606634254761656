package dev.idem.runtime.internal.pipeline;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The meters of one pipeline other than its outcomes ({@link Outcomes}), created once so the hot path only
 * records: {@code idem.handler.duration{pipeline}} times handler runs, {@code idem.store.duration{pipeline,
 * operation}} store calls, {@code idem.emitted} counts emitted messages; the gauges of a running pipeline are
 * registered by {@link #watch}.
 */
final class PipelineMetrics {

    static final String HANDLER_DURATION = "idem.handler.duration";
    static final String STORE_DURATION = "idem.store.duration";
    static final String EMITTED = "idem.emitted";
    static final String BACKLOG = "idem.backlog";
    static final String IN_FLIGHT = "idem.inflight";
    static final String OLDEST_IN_FLIGHT = "idem.inflight.oldest.age";

    /** Messages handlers emitted: published in plain mode, written to the outbox in transactional mode. */
    final Counter emitted;
    final Timer handler;
    final Timer claim;
    final Timer complete;
    final Timer release;
    final Timer renew;

    private final MeterRegistry registry;
    private final String pipeline;
    private volatile MultiGauge backlog;

    PipelineMetrics(MeterRegistry registry, String pipeline) {
        this.registry = registry;
        this.pipeline = pipeline;
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

    /**
     * Registers the gauges of a running pipeline: {@code idem.inflight} (deliveries held unsettled),
     * {@code idem.inflight.oldest.age} (seconds since the oldest of them was dispatched to the workers; 0 when
     * none) and {@code idem.backlog{partition}} (what the broker still holds, see {@link #backlog}).
     */
    void watch(InFlight inFlight, LongSupplier ticker) {
        Gauge.builder(IN_FLIGHT, inFlight, InFlight::count)
                .description("Deliveries held unsettled").tag("pipeline", pipeline).register(registry);
        Gauge.builder(OLDEST_IN_FLIGHT, inFlight, f -> oldestSeconds(f, ticker))
                .description("Seconds since the oldest unsettled delivery was dispatched").baseUnit("seconds")
                .tag("pipeline", pipeline).register(registry);
        backlog = MultiGauge.builder(BACKLOG)
                .description("Messages the broker holds for the pipeline, not yet acknowledged: end minus committed"
                        + " offset per Kafka partition, ready messages per queue")
                .tag("pipeline", pipeline).register(registry);
    }

    private static double oldestSeconds(InFlight inFlight, LongSupplier ticker) {
        long oldest = inFlight.oldestDispatch();
        return oldest == Long.MAX_VALUE ? 0 : Math.max(0, ticker.getAsLong() - oldest) / 1e9;
    }

    /** Publishes the subscription's latest backlog figures, one row per partition or queue. */
    void backlog(Map<String, Long> figures) {
        MultiGauge gauge = backlog;
        if (gauge == null) {
            return;
        }
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        figures.forEach((partition, n) -> rows.add(MultiGauge.Row.of(Tags.of("partition", partition), n)));
        gauge.register(rows, true);
    }
}
