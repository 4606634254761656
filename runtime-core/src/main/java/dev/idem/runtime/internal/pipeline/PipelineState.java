package dev.idem.runtime.internal.pipeline;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.internal.payload.Payloads;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreKey;
import java.util.function.LongSupplier;

/**
 * What every stage of one pipeline reads: its settings, handler and clock, and its phase, which only
 * {@link Pipeline} changes. What the stages share and write has an owner of its own: the in-flight bookkeeping
 * ({@link InFlight}), the store and its health ({@link StoreCalls}), the outcome counts ({@link Outcomes}).
 * Thread-safe.
 */
final class PipelineState {

    enum Phase { NEW, RUNNING, DRAINING, ABORTING, STOPPED }

    final PipelineConfig config;
    /** The pipeline's name: in log lines, dead-letter reasons and the handler's context. */
    final String name;
    /** The scope of its keys in the store ({@code namespace}, by default the name). */
    final String namespace;
    /** What the store keeps of a key or aggregate ID ({@code store.key-digest}); see {@link #storeKey}. */
    final KeyDigest keyDigest;
    final MessageHandler handler;
    final LongSupplier ticker;
    /** The handler's {@code context.logger()}: SLF4J logger {@code idem.handler.<name>}. */
    final System.Logger handlerLogger;
    /** Spans of the deliveries; {@link MessageTracing#OFF} unless the runtime was given OpenTelemetry. */
    final MessageTracing tracing;
    /** How payloads are read before each run and what the handler sends is written ({@code payload.*}). */
    final Payloads payloads;

    /** Request/reply; set once by the {@link Pipeline}'s constructor, before any stage runs. */
    Replies replies;

    /** Where plain mode publishes what handlers emit; set by {@link Pipeline#start}, before any delivery. */
    volatile BrokerAdapter adapter;
    volatile Phase phase = Phase.NEW;

    PipelineState(PipelineConfig config, MessageHandler handler, LongSupplier ticker, MessageTracing tracing,
            KeyDigest keyDigest) {
        this.config = config;
        this.name = config.name();
        this.namespace = config.namespace();
        this.keyDigest = keyDigest;
        this.handler = handler;
        this.ticker = ticker;
        this.tracing = tracing;
        this.handlerLogger = HandlerLogger.of(config.name());
        this.payloads = Payloads.of(config, handler);
    }

    /** The key the store holds for a message key or aggregate ID: the only place the digest is applied. */
    StoreKey storeKey(String id) {
        return new StoreKey(namespace, keyDigest.apply(id));
    }

    /** The watermark a sequenced work's completion raises; {@code null} without the sequence guard. */
    SequenceAdvance advanceOf(Work w) {
        return w.aggregate == null ? null
                : new SequenceAdvance(w.aggregate, w.sequenceNumber, config.sequence().retention());
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
