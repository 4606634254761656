package dev.idem.spi;

import java.time.Duration;

/**
 * An optional capability of a {@link DedupStore} whose keys live in the same database as the
 * handler's data (the JDBC store): the key is recorded in the same transaction as the handler's own
 * writes, so both commit or neither does. See DESIGN.md, "Transactional mode".
 *
 * <p>Called by pipeline worker threads, concurrently for different keys; implementations are
 * thread-safe. A concurrent call for the same key waits on the store's unique key until the first
 * transaction ends, then sees {@link Outcome#DUPLICATE} if it committed.
 *
 * <p>A namespace (pipeline) uses one mode: {@code runOnce} takes a key over even from a live claim
 * made through {@link #claim}, so mixing both modes on one namespace could run a handler twice.
 */
public interface TransactionalDedupStore extends DedupStore {

    /** How one {@link #runOnce} call ended. */
    enum Outcome {
        /** The work ran and its transaction, with the key marked completed, committed. */
        COMMITTED,
        /** The key was already completed with the same payload fingerprint (or without one): the work did not run. */
        DUPLICATE,
        /** The key was already completed for another payload: the work did not run. */
        DUPLICATE_FINGERPRINT_MISMATCH
    }

    /** The handler's part of the transaction. */
    @FunctionalInterface
    interface Work {
        /**
         * Runs inside the transaction.
         *
         * @throws Exception any failure; the transaction is rolled back, the key left absent
         */
        void run(StoreTransaction transaction) throws Exception;
    }

    /**
     * Opens a transaction, records {@code key} as completed for {@code retention} (waiting for a concurrent
     * transaction holding the same key), runs {@code work} in it unless the key was already completed,
     * and commits.
     *
     * @throws StoreException when the database fails (connection, deadlock, timeout); rolled back
     * @throws Exception whatever {@code work} threw; rolled back, the key left as it was
     */
    Outcome runOnce(StoreKey key, String fingerprint, Duration retention, Work work) throws Exception;

    /** The transaction a {@link Work} runs in, as the handler sees it through its context. */
    interface StoreTransaction {
        /**
         * The transaction as {@code type} (the JDBC store offers {@code java.sql.Connection} and Jdbi's
         * {@code Handle}), or {@code null} if it cannot be seen as one.
         */
        <T> T unwrap(Class<T> type);
    }
}
