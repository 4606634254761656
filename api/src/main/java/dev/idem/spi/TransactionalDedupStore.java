package dev.idem.spi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An optional capability of a {@link DedupStore} whose keys live in the same database as the
 * handler's data (the JDBC store): the key is recorded in the same transaction as the handler's own
 * writes, so both commit or neither does. See docs/design.md, "Transactional mode".
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
        DUPLICATE_FINGERPRINT_MISMATCH,
        /**
         * Sequenced runs only: the aggregate's watermark was already at or above the event's number. The key
         * was recorded as completed and the transaction committed; the work did not run.
         */
        STALE,
        /**
         * Sequenced runs that wait for gaps only: the watermark was below the event's number minus one. The
         * transaction was rolled back (the key is left as it was); the work did not run.
         */
        SEQUENCE_GAP
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

    /**
     * {@link #runOnce(StoreKey, String, Duration, Work)} with the sequence guard inside the transaction: after
     * recording the key, it locks the aggregate's watermark (a {@link SequencedDedupStore}'s), then answers
     * {@link Outcome#STALE} if the watermark is at or above {@code advance.number()} (committing the key as
     * completed, the work not run), {@link Outcome#SEQUENCE_GAP} if {@code waitForGaps} and the watermark is
     * below {@code advance.number() - 1} (rolling back), and otherwise runs the work and raises the watermark
     * to {@code advance.number()} in the same transaction. Two transactions of one aggregate serialize on its
     * watermark. A duplicate key answers {@link Outcome#DUPLICATE} before the watermark is looked at.
     *
     * <p>The default handles {@code advance == null} only; a store that implements {@link SequencedDedupStore}
     * overrides it.
     *
     * @throws UnsupportedOperationException if {@code advance} is set and the store keeps no watermarks
     */
    default Outcome runOnce(StoreKey key, String fingerprint, Duration retention, SequenceAdvance advance,
            boolean waitForGaps, Work work) throws Exception {
        if (advance == null) {
            return runOnce(key, fingerprint, retention, work);
        }
        throw new UnsupportedOperationException(getClass().getName() + " keeps no sequence watermarks");
    }

    /**
     * One message's part of {@link #runGroup}: the arguments of
     * {@link #runOnce(StoreKey, String, Duration, SequenceAdvance, boolean, Work)}.
     *
     * @param advance the sequence guard's watermark, or {@code null}
     */
    record GroupMember(StoreKey key, String fingerprint, Duration retention, SequenceAdvance advance,
            boolean waitForGaps, Work work) {
        public GroupMember {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(retention, "retention");
            Objects.requireNonNull(work, "work");
        }
    }

    /** Where {@link #runGroup(java.util.List, Savepoints)} sets its members' savepoints. */
    enum Savepoints {
        /** Each member runs under a savepoint of its own, set before its work: every work runs once a group. */
        PER_MESSAGE,
        /**
         * The members run without savepoints; only when a work throws is the whole transaction rolled back and
         * the group run again with a savepoint per member. It spares a round trip per member, at the price that
         * a failing member makes the works before it run twice (the first run rolled back): right for works
         * whose every effect is in the transaction.
         */
        ON_FAILURE
    }

    /** What became of one {@link GroupMember} once {@link #runGroup} returned. */
    sealed interface GroupResult {
        /** The member ended with this outcome; durable, since the group's transaction committed. */
        record Done(Outcome outcome) implements GroupResult {
        }

        /** The member's work threw: its part was rolled back to its savepoint; nothing of it committed. */
        record Failed(Exception cause) implements GroupResult {
        }
    }

    /**
     * Runs several members in one database transaction, each under a savepoint of its own: a member does
     * exactly what {@link #runOnce(StoreKey, String, Duration, SequenceAdvance, boolean, Work)} would (a
     * duplicate or stale key skips its work, a gap rolls it back), and a member whose work throws is rolled
     * back to its savepoint without touching the others. Then the transaction commits once for all. The
     * members' keys are distinct.
     *
     * <p>The default runs each member in a transaction of its own, so a store without savepoints stays
     * correct, without the gain.
     *
     * @return one result per member, in order, all durable
     * @throws StoreException when the transaction as a whole failed (connection, deadlock, commit): nothing of
     *         the group committed
     */
    default List<GroupResult> runGroup(List<GroupMember> members) {
        List<GroupResult> results = new ArrayList<>(members.size());
        for (GroupMember m : members) {
            try {
                results.add(new GroupResult.Done(
                        runOnce(m.key(), m.fingerprint(), m.retention(), m.advance(), m.waitForGaps(), m.work())));
            } catch (StoreException e) {
                results.add(new GroupResult.Failed(e));
                if (e.retriable()) {
                    // The store is unreachable: the rest are not tried, and fail with the same cause.
                    while (results.size() < members.size()) {
                        results.add(new GroupResult.Failed(e));
                    }
                    return results;
                }
            } catch (Exception e) {
                results.add(new GroupResult.Failed(e));
            }
        }
        return results;
    }

    /**
     * {@link #runGroup(java.util.List)} with its savepoints set as {@code savepoints} says; every result means
     * the same. The default ignores {@code savepoints} and sets one per member.
     */
    default List<GroupResult> runGroup(List<GroupMember> members, Savepoints savepoints) {
        return runGroup(members);
    }

    /**
     * One key of {@link #runBatch}: the arguments of {@link #runOnce(StoreKey, String, Duration, Work)}, less the work.
     */
    record BatchMember(StoreKey key, String fingerprint, Duration retention) {
        public BatchMember {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(retention, "retention");
        }
    }

    /** The handler's part of a {@link #runBatch} transaction: one run for every member to run. */
    @FunctionalInterface
    interface BatchWork {
        /**
         * Runs inside the transaction.
         *
         * @param running the indexes, in {@code members}, of the members to run (those not completed already), in
         *        order; never empty
         * @throws Exception any failure; the whole transaction is rolled back, every key left as it was
         */
        void run(StoreTransaction transaction, List<Integer> running) throws Exception;
    }

    /**
     * Runs a batch handler's work for several keys in one transaction, all or nothing: records every member's key as
     * completed (waiting for a concurrent transaction holding one), runs {@code work} once for the members whose key
     * was not already completed, and commits. A member whose key is completed and remembered is a duplicate and is
     * not given to the work; when every member is, the work does not run. The members' keys are distinct.
     *
     * <p>The default throws {@link UnsupportedOperationException}: a store that cannot hold several keys in one
     * transaction does not offer batch handlers in transactional mode, and the runtime says so at startup.
     *
     * @return one outcome per member, in order: {@link Outcome#COMMITTED} for those the work ran for,
     *         {@link Outcome#DUPLICATE} or {@link Outcome#DUPLICATE_FINGERPRINT_MISMATCH} for the others; durable
     * @throws StoreException when the database fails (connection, deadlock, timeout); nothing committed
     * @throws Exception whatever {@code work} threw; nothing committed
     */
    default List<Outcome> runBatch(List<BatchMember> members, BatchWork work) throws Exception {
        throw new UnsupportedOperationException(getClass().getName() + " cannot run a batch in one transaction");
    }

    /** Whether {@link #runBatch} is implemented; {@code false} by default. */
    default boolean runsBatches() {
        return false;
    }

    /** The transaction a {@link Work} runs in, as the handler sees it through its context. */
    interface StoreTransaction {
        /**
         * The transaction as {@code type} (the JDBC store offers {@code java.sql.Connection} and Jdbi's
         * {@code Handle}), or {@code null} if it cannot be seen as one.
         */
        <T> T unwrap(Class<T> type);
    }
}
