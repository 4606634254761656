package dev.idem.runtime.internal.pipeline;

import dev.idem.api.HandlerContext;
import dev.idem.runtime.internal.payload.Payloads;
import dev.idem.spi.StoredReply;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.LongSupplier;

/**
 * The context of one handler run. The wall-clock deadline is derived only when asked for; the
 * transaction is the store's, in transactional mode, else absent; what the run emits is collected for the
 * pipeline to publish (plain mode) or write to the outbox (transactional mode) once the handler returned; its durable
 * steps are {@link Steps}'.
 */
final class RunContext implements HandlerContext {

    private final String pipeline;
    private final System.Logger logger;
    private final long deadlineNanos;
    private final LongSupplier ticker;
    private final StoreTransaction transaction;
    /** Collects what the run emits; {@code null} when it cannot emit, for {@link #cannotEmit}. */
    private final Emissions emissions;
    private final String cannotEmit;
    /** The pipeline's key namespace and the message's idempotency key ({@code null} when it runs without one). */
    private final String namespace;
    private final String key;
    /** The run's durable steps. */
    private final Steps.Bound steps;
    /** Writes what the handler sends as an object. */
    private final Payloads payloads;
    /** Checks a reply; {@code null} in a context that cannot reply. */
    private final Replies replies;
    private final Work work;
    /** What the handler replied in this run, or {@code null}. */
    private StoredReply reply;

    RunContext(String pipeline, System.Logger logger, long deadlineNanos, LongSupplier ticker,
            StoreTransaction transaction, Emissions emissions, String cannotEmit, String namespace, String key,
            Steps.Bound steps, Payloads payloads, Replies replies, Work work) {
        this.pipeline = pipeline;
        this.logger = logger;
        this.deadlineNanos = deadlineNanos;
        this.ticker = ticker;
        this.transaction = transaction;
        this.emissions = emissions;
        this.cannotEmit = cannotEmit;
        this.namespace = namespace;
        this.key = key;
        this.steps = steps;
        this.payloads = payloads;
        this.replies = replies;
        this.work = work;
    }

    @Override
    public String pipeline() {
        return pipeline;
    }

    @Override
    public System.Logger logger() {
        return logger;
    }

    @Override
    public Instant deadline() {
        return Instant.now().plus(remaining());
    }

    @Override
    public Duration remaining() {
        return Duration.ofNanos(deadlineNanos - ticker.getAsLong());
    }

    @Override
    public String send(String destination, String key, byte[] payload, Map<String, String> headers) {
        if (emissions == null) {
            throw new UnsupportedOperationException(cannotEmit);
        }
        return emissions.send(destination, key, payload, headers);
    }

    @Override
    public String send(String destination, String key, Object payload, Map<String, String> headers) {
        return send(destination, key, payloads.encode(payload), headers);
    }

    @Override
    public void reply(byte[] payload, Map<String, String> headers) {
        if (replies == null) {
            throw new UnsupportedOperationException("this handler context cannot reply");
        }
        reply = replies.check(work, payload, headers);
    }

    @Override
    public void reply(Object payload) {
        reply(payload instanceof byte[] bytes ? bytes : payloads.encode(payload), Map.of());
    }

    /** What the handler replied, or {@code null}. */
    StoredReply replied() {
        return reply;
    }

    @Override
    public String idempotencyKey(String scope) {
        if (scope == null || scope.isBlank()) {
            throw new IllegalArgumentException("idempotencyKey needs a scope naming the call, such as \"charge\"; got "
                    + (scope == null ? "null" : "'" + scope + "'"));
        }
        if (key == null) {
            throw new UnsupportedOperationException("pipeline '" + pipeline + "' runs this message without an"
                    + " idempotency key, so its re-runs could not repeat a derived key; give it a key (pipelines."
                    + pipeline + ".id)");
        }
        return Emissions.callKeyOf(namespace, key, scope);
    }

    @Override
    public <T> T step(String name, Class<T> type, Callable<T> action) throws Exception {
        return steps.step(name, type, action);
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return transaction == null ? Optional.empty() : Optional.ofNullable(transaction.unwrap(type));
    }
}
