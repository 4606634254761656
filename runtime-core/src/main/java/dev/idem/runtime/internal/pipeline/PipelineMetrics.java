package dev.idem.runtime.internal.pipeline;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
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
 * operation}} store calls, {@code idem.emitted} counts emitted messages, {@code idem.steps{pipeline,outcome}} durable
 * steps that ran or were replayed; the gauges of a running pipeline are
 * registered by {@link #watch}, and those of its sequence guard by {@link #watchSequences}.
 */
final class PipelineMetrics {

    static final String HANDLER_DURATION = "idem.handler.duration";
    static final String STORE_DURATION = "idem.store.duration";
    static final String EMITTED = "idem.emitted";
    static final String STEPS = "idem.steps";
    static final String BACKLOG = "idem.backlog";
    static final String IN_FLIGHT = "idem.inflight";
    static final String OLDEST_IN_FLIGHT = "idem.inflight.oldest.age";
    static final String SEQUENCE_WAITING = "idem.sequence.waiting";
    static final String SEQUENCE_WAITING_AGGREGATES = "idem.sequence.waiting.aggregates";
    static final String SEQUENCE_BLOCKED = "idem.sequence.blocked";
    static final String SEQUENCE_BLOCKED_OVERFLOW = "idem.sequence.blocked.overflow";
    static final String BATCH_SIZE = "idem.batch.size";
    static final String REPLIES = "idem.replies";
    static final String BATCH_SPLITS = "idem.batch.splits";

    /** Messages handlers emitted: published in plain mode, written to the outbox in transactional mode. */
    final Counter emitted;
    final Timer handler;
    final Timer claim;
    final Timer complete;
    final Timer release;
    final Timer renew;
    /** Durable steps whose action ran ({@code idem.steps{outcome=ran}}), recorded or, without a claim, not. */
    final Counter stepsRan;
    /** Durable steps answered from their record, the action not run ({@code idem.steps{outcome=replayed}}). */
    final Counter stepsReplayed;
    final Timer steps;
    final Timer recordStep;
    /** Replies a run sent to its request ({@code idem.replies{from=run}}). */
    final Counter repliesFromRun;
    /** Stored replies sent again to a duplicate request ({@code idem.replies{from=store}}). */
    final Counter repliesFromStore;
    /** Messages per batch handler call; set by {@link #watchBatches}, for a pipeline with a batch handler. */
    DistributionSummary batchSize;
    /** Batches split in halves after their handler threw; set by {@link #watchBatches}. */
    Counter batchSplits;

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
        stepsRan = steps(registry, pipeline, "ran");
        stepsReplayed = steps(registry, pipeline, "replayed");
        steps = store(registry, pipeline, "steps");
        recordStep = store(registry, pipeline, "record-step");
        repliesFromRun = replies(registry, pipeline, "run");
        repliesFromStore = replies(registry, pipeline, "store");
    }

    private static Counter replies(MeterRegistry registry, String pipeline, String from) {
        return Counter.builder(REPLIES).description("Replies sent to requests: by the run that handled the request"
                + " (plain mode; transactional mode's go through the outbox), or the stored reply sent again to a"
                + " duplicate").tag("pipeline", pipeline).tag("from", from).register(registry);
    }

    /**
     * Registers the meters of a batch handler: {@code idem.batch.size} (messages per call) and
     * {@code idem.batch.splits} (batches split in halves after their handler threw). Per-message meters stay as for
     * single handlers; a call's run time is shared out among its messages in {@code idem.handler.duration}.
     */
    void watchBatches() {
        batchSize = DistributionSummary.builder(BATCH_SIZE).description("Messages per batch handler call")
                .tag("pipeline", pipeline).register(registry);
        batchSplits = Counter.builder(BATCH_SPLITS).description("Batches split in halves after their handler threw")
                .tag("pipeline", pipeline).register(registry);
    }

    private static Counter steps(MeterRegistry registry, String pipeline, String outcome) {
        return Counter.builder(STEPS).description("Durable steps of handlers: their action ran, or their recorded"
                + " result was replayed").tag("pipeline", pipeline).tag("outcome", outcome).register(registry);
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

    /**
     * Registers the sequence guard's meters, read from {@link Sequences}, which owns what they show:
     * {@code idem.sequence.waiting} (events set aside for a gap now), {@code idem.sequence.waiting.aggregates}
     * (aggregates with such an event), {@code idem.sequence.blocked} (aggregates with an event dead-lettered as
     * {@code sequence-gap} whose watermark has not reached it since: each later event of theirs will wait and be
     * dead-lettered too, until their dead letters are replayed) and the counter
     * {@code idem.sequence.blocked.overflow} ({@code sequence-gap} dead letters of aggregates not tracked, the
     * blocked set being full). Only for a pipeline with the guard.
     */
    void watchSequences(Sequences sequences) {
        Gauge.builder(SEQUENCE_WAITING, sequences, Sequences::waiting)
                .description("Events set aside, waiting for the sequence numbers before them")
                .tag("pipeline", pipeline).register(registry);
        Gauge.builder(SEQUENCE_WAITING_AGGREGATES, sequences, Sequences::waitingAggregates)
                .description("Aggregates with an event waiting for the sequence numbers before it")
                .tag("pipeline", pipeline).register(registry);
        Gauge.builder(SEQUENCE_BLOCKED, sequences, Sequences::blocked)
                .description("Aggregates with an event dead-lettered as sequence-gap that their watermark has not"
                        + " reached since: each later event waits sequence.gap-timeout and is dead-lettered too;"
                        + " heal with idem dlq replay --aggregate")
                .tag("pipeline", pipeline).register(registry);
        FunctionCounter.builder(SEQUENCE_BLOCKED_OVERFLOW, sequences, Sequences::blockedOverflow)
                .description("sequence-gap dead letters of aggregates not tracked in idem.sequence.blocked,"
                        + " which holds at most " + Sequences.MAX_BLOCKED)
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
