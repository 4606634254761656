package dev.idem.runtime.pipeline;

import dev.idem.api.HandlerContext;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * The context of one handler run. The wall-clock deadline is derived only when asked for; the
 * transaction is the store's, in transactional mode, else absent.
 */
final class RunContext implements HandlerContext {

    private final String pipeline;
    private final System.Logger logger;
    private final long deadlineNanos;
    private final LongSupplier ticker;
    private final StoreTransaction transaction;

    RunContext(String pipeline, System.Logger logger, long deadlineNanos, LongSupplier ticker,
            StoreTransaction transaction) {
        this.pipeline = pipeline;
        this.logger = logger;
        this.deadlineNanos = deadlineNanos;
        this.ticker = ticker;
        this.transaction = transaction;
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
    public <T> Optional<T> transaction(Class<T> type) {
        return transaction == null ? Optional.empty() : Optional.ofNullable(transaction.unwrap(type));
    }
}
