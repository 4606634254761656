package dev.idem.runtime.pipeline;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.TransactionalDedupStore;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * What the stages of one pipeline share: its settings, store, metrics and clock, its phase, whether
 * the store is down, the keys it holds and the batches the lease keeper watches. Thread-safe.
 */
final class PipelineState {

    enum Phase { NEW, RUNNING, DRAINING, ABORTING, STOPPED }

    final PipelineConfig config;
    /** The pipeline's name: in log lines, dead-letter reasons and the handler's context. */
    final String name;
    /** The scope of its keys in the store ({@code namespace}, by default the name). */
    final String namespace;
    final MessageHandler handler;
    final DedupStore store;
    /** The store, in transactional mode; {@code null} otherwise. */
    final TransactionalDedupStore transactionalStore;
    final PipelineMetrics metrics;
    final InFlightLimit limit;
    final LongSupplier ticker;
    final System.Logger handlerLogger;
    /** Claims this pipeline holds, by idempotency key: a copy that comes while one is held follows it. */
    final Map<String, Work> heldKeys = new ConcurrentHashMap<>();
    /** Dispatched batches with works not yet settled: what the lease keeper watches. */
    final Set<Batch> tracked = ConcurrentHashMap.newKeySet();

    /** The store's outbox in transactional mode, where the store keeps one; {@code null} otherwise. */
    final OutboxStore outbox;
    /** Where plain mode publishes what handlers emit; set when the pipeline starts. */
    volatile BrokerAdapter adapter;
    /** Spans of the deliveries; {@link MessageTracing#OFF} unless the runtime was given OpenTelemetry. Set before start. */
    MessageTracing tracing = MessageTracing.OFF;
    /** Called after a transaction that wrote to the outbox committed: wakes the outbox relay. */
    volatile Runnable outboxWritten = () -> { };

    volatile Phase phase = Phase.NEW;
    /**
     * Set when a store call failed retriably, cleared when one succeeds. While set, no handler run
     * starts in plain mode: its completion could not be written, and it would run again once the store is back.
     */
    volatile boolean storeDown;

    PipelineState(PipelineConfig config, MessageHandler handler, DedupStore store,
            TransactionalDedupStore transactionalStore, PipelineMetrics metrics, LongSupplier ticker) {
        this.config = config;
        this.name = config.name();
        this.namespace = config.namespace();
        this.handler = handler;
        this.store = store;
        this.transactionalStore = transactionalStore;
        this.outbox = transactionalStore instanceof OutboxStore o ? o : null;
        this.metrics = metrics;
        this.limit = new InFlightLimit(config.maxInFlight());
        this.ticker = ticker;
        this.handlerLogger = System.getLogger("idem.handler." + config.name());
    }

    /** The watermark a sequenced work's completion raises; {@code null} without the sequence guard. */
    SequenceAdvance advanceOf(Work w) {
        return w.aggregate == null ? null
                : new SequenceAdvance(w.aggregate, w.sequenceNumber, config.sequence().retention());
    }

    /** The outcome a handled work is counted as. */
    PipelineMetrics.Outcome handledOutcome(Work w) {
        return w.rejected ? metrics.rejected : metrics.processed;
    }

    long now() {
        return ticker.getAsLong();
    }

    boolean running() {
        return phase == Phase.RUNNING;
    }

    boolean aborting() {
        Phase p = phase;
        return p == Phase.ABORTING || p == Phase.STOPPED;
    }
}
