package dev.idem.store.jdbc;

import dev.idem.spi.StoreException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;

/**
 * How the store's parts ({@link JdbcDedupStore}, {@link JdbcTransactionalRuns}, {@link JdbcOutbox}) reach the
 * database: a call on a pooled connection of its own, its failures turned into {@link StoreException}s by
 * {@link Failures}; and, for a statement that lost a race, how often and after what pause it runs again.
 *
 * <p>Thread-safe: each call takes its own connection.
 */
final class JdbcCalls {

    /** Runs of a statement that lost a deadlock or an insert race; nothing of a lost run remains. */
    static final int MAX_CONFLICT_RUNS = 10;

    private final Jdbi jdbi;
    private final Failures failures;
    private final BooleanSupplier closed;

    JdbcCalls(Jdbi jdbi, Failures failures, BooleanSupplier closed) {
        this.jdbi = jdbi;
        this.failures = failures;
        this.closed = closed;
    }

    /** Runs {@code callback} on a connection of its own, which is then handed back. */
    <T> T call(String operation, HandleCallback<T, RuntimeException> callback) {
        checkNotClosed(operation);
        try {
            return jdbi.withHandle(callback);
        } catch (StoreException e) {
            throw e;
        } catch (RuntimeException e) {
            throw failures.of(operation, e);
        }
    }

    /** @throws StoreException, not retriable, once the store is closed */
    void checkNotClosed(String operation) {
        if (closed.getAsBoolean()) {
            throw failures.of(operation, "the store is closed", false);
        }
    }

    /** A connection for a caller that runs its own transaction on it, and then {@link #closeQuietly closes} it. */
    Handle open(String operation) {
        try {
            return jdbi.open();
        } catch (RuntimeException e) {
            throw failures.of(operation + " (getting a connection)", e);
        }
    }

    static void closeQuietly(Handle handle) {
        try {
            handle.close();
        } catch (RuntimeException ignored) {
            // The connection is broken or was already handed back; the failure that matters was reported.
        }
    }

    /**
     * Waits before running a statement that lost a race again, longer each time and at random, so
     * that the winner (H2 fails a racing insert at once rather than waiting for it) can commit first.
     */
    static void backOff(int run) {
        long maxMillis = Math.min(50, 1L << run);
        try {
            Thread.sleep(ThreadLocalRandom.current().nextLong(1, maxMillis + 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
