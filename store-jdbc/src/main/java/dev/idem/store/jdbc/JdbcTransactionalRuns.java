package dev.idem.store.jdbc;

import dev.idem.spi.FencingTokens;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.BatchMember;
import dev.idem.spi.TransactionalDedupStore.BatchWork;
import dev.idem.spi.TransactionalDedupStore.GroupMember;
import dev.idem.spi.TransactionalDedupStore.GroupResult;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import dev.idem.spi.TransactionalDedupStore.Savepoints;
import dev.idem.spi.TransactionalDedupStore.Work;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;
import org.jdbi.v3.core.statement.Query;

/**
 * The transactional mode of a {@link JdbcDedupStore} ({@link TransactionalDedupStore}): {@code runOnce} writes the
 * key completed and runs the handler's work in one transaction, and {@code runGroup} runs several messages in one,
 * each under a savepoint of its own. Built by the store on its connections, dialect, failures and sequence guard,
 * and called only by it.
 *
 * <p>Thread-safe: each run takes its own connection, and nothing else is kept between runs.
 */
final class JdbcTransactionalRuns {

    private final JdbcCalls calls;
    private final Dialect dialect;
    private final Failures failures;
    private final JdbcWatermarks watermarks;

    JdbcTransactionalRuns(JdbcCalls calls, Dialect dialect, Failures failures, JdbcWatermarks watermarks) {
        this.calls = calls;
        this.dialect = dialect;
        this.failures = failures;
        this.watermarks = watermarks;
    }

    /**
     * The run of {@code work} with its key; with an {@code advance}, the key's row is written and locked first (a
     * duplicate answers as without), then {@link #guard} locks the aggregate's watermark and decides in the same
     * transaction.
     */
    Outcome runOnce(StoreKey key, String fingerprint, Duration retention, SequenceAdvance advance,
            boolean waitForGaps, Work work) throws Exception {
        Objects.requireNonNull(retention, "retention");
        Objects.requireNonNull(work, "work");
        ClaimRow row = ClaimRow.completed(key, fingerprint, retention, FencingTokens.next());
        if (advance != null) {
            JdbcWatermarks.requireStorable(advance);
        }
        for (int pass = 1; ; pass++) {
            Handle handle = calls.open("transactional run");
            try {
                StoredRow held = takeKey(handle, row, pass);
                if (held != null && held.token() == row.token()) {
                    JdbcWatermarks.Verdict verdict = advance == null ? JdbcWatermarks.Verdict.RUN
                            : guard(handle, advance, waitForGaps, pass);
                    if (verdict == JdbcWatermarks.Verdict.RUN) {
                        runAndCommit(handle, work, key, row);
                        return Outcome.COMMITTED;
                    }
                    if (verdict != null) {
                        return verdict.outcome;
                    }
                } else if (held != null) {
                    rollback(handle, null);
                    if (held.live() && held.state() == Dialect.COMPLETED) {
                        return held.duplicateOf(row.fingerprint()).fingerprintMatches() ? Outcome.DUPLICATE
                                : Outcome.DUPLICATE_FINGERPRINT_MISMATCH;
                    }
                }
                // Lost a race (the row changed or vanished between the write and the read): try again.
                if (pass >= JdbcCalls.MAX_CONFLICT_RUNS) {
                    throw failures.of("transactional run", "the key's row kept changing under " + pass + " tries", true);
                }
                row = row.withToken(FencingTokens.next());
            } finally {
                JdbcCalls.closeQuietly(handle);
            }
        }
    }

    /**
     * One transaction for all the members, a savepoint for each. The members' rows are locked and read in one
     * statement first; a member whose key is completed and remembered is a duplicate, and every other member with
     * a row runs under its savepoint (its watermark guarded, its work run), a member whose work throws rolled back
     * to its savepoint alone. The keys of the members that ran (or were stale) are then written completed in one
     * batch, on the rows still locked, and the transaction commits once: so a member costs its savepoint and its
     * work, and the group a few statements more. A member whose key has no row yet (it was never claimed) is
     * written and locked on its own under its savepoint first, as {@link #runOnce} would; if that row changed
     * under it (a race with another consumer's claim) it is run on its own after the group commits. Any failure of
     * the database itself (a deadlock, a lost connection, a savepoint that is gone because the server aborted the
     * transaction) rolls the whole group back: the runtime then runs every member again.
     *
     * <p>Under {@link Savepoints#ON_FAILURE} a member with a locked row and no sequence guard runs without a
     * savepoint, and when such a member's work throws, the transaction is rolled back and the group runs again
     * with a savepoint for each member.
     *
     * <p>{@code members} holds two or more; the store runs a smaller group as the SPI's default does.
     */
    List<GroupResult> runGroup(List<GroupMember> members, Savepoints savepoints) {
        List<ClaimRow> rows = new ArrayList<>(members.size());
        for (GroupMember m : members) {
            if (m.advance() != null) {
                JdbcWatermarks.requireStorable(m.advance());
            }
            rows.add(ClaimRow.completed(m.key(), m.fingerprint(), m.retention(), FencingTokens.next()));
        }
        GroupResult[] results = savepoints == Savepoints.ON_FAILURE ? runGroupOnce(members, rows, false) : null;
        if (results == null) {
            results = runGroupOnce(members, rows, true);
        }
        List<GroupResult> out = new ArrayList<>(members.size());
        for (int i = 0; i < members.size(); i++) {
            GroupMember m = members.get(i);
            if (results[i] == null) {
                try {
                    results[i] = new GroupResult.Done(runOnce(m.key(), m.fingerprint(), m.retention(), m.advance(),
                            m.waitForGaps(), m.work()));
                } catch (Exception e) {
                    results[i] = new GroupResult.Failed(e);
                }
            }
            out.add(results[i]);
        }
        return out;
    }

    /**
     * A batch handler's transaction: the members' rows are locked and read in one statement; a member whose key is
     * completed and remembered is a duplicate; a member whose key has no row yet is written completed and locked;
     * the work runs once for every other member; their keys are written completed in one batch and the transaction
     * commits. A member's row that changed under it (a race with another consumer's claim) rolls the whole
     * transaction back and the batch is tried again; anything the work throws rolls it back and is rethrown.
     */
    List<Outcome> runBatch(List<BatchMember> members, BatchWork work) throws Exception {
        Objects.requireNonNull(work, "work");
        List<ClaimRow> rows = new ArrayList<>(members.size());
        for (BatchMember m : members) {
            rows.add(ClaimRow.completed(m.key(), m.fingerprint(), m.retention(), FencingTokens.next()));
        }
        for (int pass = 1; ; pass++) {
            List<Outcome> outcomes = runBatchOnce(members, rows, work);
            if (outcomes != null) {
                return outcomes;
            }
            if (pass >= JdbcCalls.MAX_CONFLICT_RUNS) {
                throw failures.of("batch transactional run", "the keys' rows kept changing under " + pass + " tries",
                        true);
            }
            JdbcCalls.backOff(pass);
            for (int i = 0; i < rows.size(); i++) {
                rows.set(i, rows.get(i).withToken(FencingTokens.next()));
            }
        }
    }

    /** One try of {@link #runBatch}; {@code null} when a row changed under it (rolled back, to try again). */
    private List<Outcome> runBatchOnce(List<BatchMember> members, List<ClaimRow> rows, BatchWork work)
            throws Exception {
        Outcome[] outcomes = new Outcome[rows.size()];
        List<Integer> running = new ArrayList<>(rows.size());
        List<ClaimRow> toComplete = new ArrayList<>(rows.size());
        Handle handle = calls.open("batch transactional run");
        try {
            try {
                handle.begin();
                Map<ByteBuffer, StoredRow> locked = lockRows(handle, rows);
                for (int i = 0; i < rows.size(); i++) {
                    ClaimRow row = rows.get(i);
                    StoredRow held = locked.get(Dialect.rowKey(row.namespace(), row.id(), 0));
                    if (held == null) {
                        dialect.upsertInTransaction(handle, row);
                        held = handle.createQuery(dialect.lockRow())
                                .bind(0, row.namespace()).bind(1, row.id())
                                .map((rs, ctx) -> StoredRow.read(rs, 1))
                                .findOne().orElse(null);
                        if (held != null && held.token() == row.token()) {
                            outcomes[i] = Outcome.COMMITTED;
                            running.add(i);
                            continue;
                        }
                        if (held == null || !held.live() || held.state() != Dialect.COMPLETED) {
                            rollback(handle, null);
                            return null;
                        }
                    }
                    if (held.live() && held.state() == Dialect.COMPLETED) {
                        outcomes[i] = held.duplicateOf(row.fingerprint()).fingerprintMatches() ? Outcome.DUPLICATE
                                : Outcome.DUPLICATE_FINGERPRINT_MISMATCH;
                    } else {
                        outcomes[i] = Outcome.COMMITTED;
                        running.add(i);
                        toComplete.add(row);
                    }
                }
            } catch (RuntimeException e) {
                rollback(handle, e);
                if (failures.isConflict(e)) {
                    return null;
                }
                throw failures.of("locking the keys of a batch transaction", e);
            }
            if (running.isEmpty()) {
                rollback(handle, null);
                return List.of(outcomes);
            }
            // The keys the work runs for, with the rows that complete them: a reply recorded for one names its token.
            Map<StoreKey, ClaimRow> completing = new HashMap<>(running.size() * 2);
            for (int i : running) {
                completing.put(members.get(i).key(), rows.get(i));
            }
            JdbcTransaction transaction = new JdbcTransaction(handle, completing);
            try {
                work.run(transaction, List.copyOf(running));
            } catch (Throwable t) {
                transaction.end();
                rollback(handle, t);
                throw t;
            }
            transaction.end();
            try {
                completeLocked(handle, toComplete);
                handle.commit();
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("committing a batch transaction of " + rows.size(), e);
            }
            return List.of(outcomes);
        } finally {
            JdbcCalls.closeQuietly(handle);
        }
    }

    /**
     * The group's one transaction; a {@code null} result is a member to run on its own after it. With
     * {@code everySavepoint} false, a member with a locked row and no sequence guard runs without a savepoint:
     * when its work throws, the transaction is rolled back and the answer is {@code null}, to run the group
     * again with them.
     */
    private GroupResult[] runGroupOnce(List<GroupMember> members, List<ClaimRow> rows, boolean everySavepoint) {
        GroupResult[] results = new GroupResult[members.size()];
        Handle handle = calls.open("grouped transactional run");
        try {
            Map<ByteBuffer, StoredRow> locked;
            try {
                handle.begin();
                locked = lockRows(handle, rows);
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("locking the keys of a grouped transaction", e);
            }
            List<ClaimRow> toComplete = new ArrayList<>(members.size());
            for (int i = 0; i < members.size(); i++) {
                GroupMember m = members.get(i);
                ClaimRow row = rows.get(i);
                StoredRow held = locked.get(Dialect.rowKey(row.namespace(), row.id(), 0));
                String savepoint = "idem_m" + i;
                if (held == null) {
                    results[i] = runMember(handle, m, row, savepoint);
                } else if (held.live() && held.state() == Dialect.COMPLETED) {
                    results[i] = new GroupResult.Done(held.duplicateOf(row.fingerprint()).fingerprintMatches()
                            ? Outcome.DUPLICATE : Outcome.DUPLICATE_FINGERPRINT_MISMATCH);
                } else if (everySavepoint || m.advance() != null) {
                    results[i] = runLocked(handle, m, row, savepoint);
                } else if (runWithoutSavepoint(handle, m, row)) {
                    results[i] = new GroupResult.Done(Outcome.COMMITTED);
                } else {
                    return null;
                }
                if (held != null && results[i] instanceof GroupResult.Done done
                        && (done.outcome() == Outcome.COMMITTED || done.outcome() == Outcome.STALE)) {
                    toComplete.add(row);
                }
            }
            try {
                completeLocked(handle, toComplete);
                handle.commit();
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("committing a grouped transaction of " + members.size(), e);
            }
            return results;
        } finally {
            JdbcCalls.closeQuietly(handle);
        }
    }

    /**
     * Locks the rows of {@code rows}' keys, in statements of at most {@link Dialect#MAX_ROWS_PER_STATEMENT} keys
     * taken in {@linkplain #lockOrder key order}.
     */
    private Map<ByteBuffer, StoredRow> lockRows(Handle handle, List<ClaimRow> rows) {
        Map<ByteBuffer, StoredRow> locked = new HashMap<>(rows.size() * 2);
        for (List<ClaimRow> chunk : lockOrder(rows)) {
            dialect.lockRows(handle, chunk).map((rs, ctx) -> {
                locked.put(Dialect.rowKey(rs.getBytes(7), rs.getBytes(8), 0), StoredRow.read(rs, 1));
                return null;
            }).forEach(ignored -> { });
        }
        return locked;
    }

    /**
     * {@code rows} sorted by key ({@link ClaimRow#compareTo}) and cut into statements of at most
     * {@link Dialect#MAX_ROWS_PER_STATEMENT}: every transaction takes the locks of the keys it shares with another
     * in the same order, whatever its members' order and however many statements it needs, so two of them (two
     * processes given the same messages) wait for each other rather than deadlock.
     */
    static List<List<ClaimRow>> lockOrder(List<ClaimRow> rows) {
        List<ClaimRow> sorted = new ArrayList<>(rows);
        Collections.sort(sorted);
        List<List<ClaimRow>> chunks = new ArrayList<>(sorted.size() / Dialect.MAX_ROWS_PER_STATEMENT + 1);
        for (int from = 0; from < sorted.size(); from += Dialect.MAX_ROWS_PER_STATEMENT) {
            chunks.add(sorted.subList(from, Math.min(sorted.size(), from + Dialect.MAX_ROWS_PER_STATEMENT)));
        }
        return chunks;
    }

    /**
     * Writes the keys of {@code rows}, locked by this transaction, completed with the rows' tokens, in one batch.
     * Each must change one row: the lock kept every other writer out, so anything else is a fault of the database,
     * and the group is rolled back.
     */
    private void completeLocked(Handle handle, List<ClaimRow> rows) {
        if (rows.isEmpty()) {
            return;
        }
        PreparedBatch batch = handle.prepareBatch(dialect.completeLocked());
        for (ClaimRow row : rows) {
            batch.bind(0, row.token()).bind(1, row.fingerprint()).bind(2, row.expiresMicros())
                    .bind(3, row.namespace()).bind(4, row.id()).add();
        }
        for (int count : batch.execute()) {
            if (count == 0) {
                throw new IllegalStateException("a key the grouped transaction held locked had no row to complete");
            }
        }
    }

    /**
     * A member whose key's row this transaction holds locked, under its savepoint: its watermark guarded, its work
     * run; the key is written completed later, with the others. Throws a {@link StoreException} after rolling the
     * whole transaction back when the database failed.
     */
    private GroupResult runLocked(Handle handle, GroupMember m, ClaimRow row, String savepoint) {
        JdbcWatermarks.Verdict verdict = JdbcWatermarks.Verdict.RUN;
        try {
            handle.savepoint(savepoint);
            if (m.advance() != null) {
                verdict = watermarks.guard(handle, m.advance(), m.waitForGaps());
            }
        } catch (RuntimeException e) {
            rollback(handle, e);
            throw failures.of("checking a member of a grouped transaction", e);
        }
        if (verdict == JdbcWatermarks.Verdict.STALE) {
            return new GroupResult.Done(Outcome.STALE);
        }
        if (verdict == JdbcWatermarks.Verdict.GAP) {
            undo(handle, savepoint, null);
            return new GroupResult.Done(Outcome.SEQUENCE_GAP);
        }
        return runWork(handle, m, row, savepoint);
    }

    /** Runs a member's work under its savepoint, rolling back to it alone when the work throws. */
    private GroupResult runWork(Handle handle, GroupMember m, ClaimRow row, String savepoint) {
        JdbcTransaction transaction = new JdbcTransaction(handle, m.key(), row);
        try {
            m.work().run(transaction);
        } catch (Exception e) {
            transaction.end();
            undo(handle, savepoint, e);
            return new GroupResult.Failed(e);
        } catch (Error e) {
            transaction.end();
            rollback(handle, e);
            throw e;
        }
        transaction.end();
        return new GroupResult.Done(Outcome.COMMITTED);
    }

    /**
     * Runs a member's work with no savepoint of its own: true when it returned; when it threw, the whole
     * transaction is rolled back and the answer is false.
     */
    private boolean runWithoutSavepoint(Handle handle, GroupMember m, ClaimRow row) {
        JdbcTransaction transaction = new JdbcTransaction(handle, m.key(), row);
        try {
            m.work().run(transaction);
        } catch (Exception e) {
            transaction.end();
            rollback(handle, e);
            return false;
        } catch (Error e) {
            transaction.end();
            rollback(handle, e);
            throw e;
        }
        transaction.end();
        return true;
    }

    /**
     * A member whose key had no row when the group locked its rows, under its savepoint, in the group's open
     * transaction: its key written completed and locked, then guarded and run; {@code null} when that row changed
     * under it (another consumer's claim raced it in), to run on its own. Throws a {@link StoreException} after
     * rolling the whole transaction back when the database failed.
     */
    private GroupResult runMember(Handle handle, GroupMember m, ClaimRow row, String savepoint) {
        StoredRow held;
        JdbcWatermarks.Verdict verdict = JdbcWatermarks.Verdict.RUN;
        try {
            handle.savepoint(savepoint);
            dialect.upsertInTransaction(handle, row);
            held = handle.createQuery(dialect.lockRow())
                    .bind(0, row.namespace()).bind(1, row.id())
                    .map((rs, ctx) -> StoredRow.read(rs, 1))
                    .findOne().orElse(null);
            if (held != null && held.token() == row.token() && m.advance() != null) {
                verdict = watermarks.guard(handle, m.advance(), m.waitForGaps());
            }
        } catch (RuntimeException e) {
            rollback(handle, e);
            throw failures.of("recording a key in a grouped transaction", e);
        }
        if (held == null || held.token() != row.token()) {
            undo(handle, savepoint, null);
            if (held != null && held.live() && held.state() == Dialect.COMPLETED) {
                return new GroupResult.Done(held.duplicateOf(row.fingerprint()).fingerprintMatches()
                        ? Outcome.DUPLICATE : Outcome.DUPLICATE_FINGERPRINT_MISMATCH);
            }
            return null;
        }
        if (verdict == JdbcWatermarks.Verdict.STALE) {
            return new GroupResult.Done(Outcome.STALE);
        }
        if (verdict == JdbcWatermarks.Verdict.GAP) {
            undo(handle, savepoint, null);
            return new GroupResult.Done(Outcome.SEQUENCE_GAP);
        }
        return runWork(handle, m, row, savepoint);
    }

    /** Rolls back to a member's savepoint; when that fails, the whole transaction, and throws. */
    private void undo(Handle handle, String savepoint, Throwable cause) {
        try {
            handle.rollbackToSavepoint(savepoint);
        } catch (RuntimeException e) {
            if (cause != null) {
                e.addSuppressed(cause);
            }
            rollback(handle, e);
            throw failures.of("rolling back to a member's savepoint in a grouped transaction", e);
        }
    }

    /**
     * Opens the transaction and writes the key as completed, waiting for a concurrent holder of the
     * key. Returns the key's row, locked; {@code null} when the write lost a race and may simply run
     * again (the transaction is then rolled back).
     */
    private StoredRow takeKey(Handle handle, ClaimRow row, int pass) {
        try {
            handle.begin();
            dialect.upsertInTransaction(handle, row);
            StoredRow held = handle.createQuery(dialect.lockRow())
                    .bind(0, row.namespace()).bind(1, row.id())
                    .map((rs, ctx) -> StoredRow.read(rs, 1))
                    .findOne().orElse(null);
            if (held == null) {
                rollback(handle, null);
            }
            return held;
        } catch (RuntimeException e) {
            rollback(handle, e);
            if (pass < JdbcCalls.MAX_CONFLICT_RUNS && failures.isConflict(e)) {
                JdbcCalls.backOff(pass);
                return null;
            }
            throw failures.of("recording the key in a transaction", e);
        }
    }

    /**
     * The sequence guard of a run that holds its key: {@link JdbcWatermarks#guard} on the open transaction, which
     * is then committed for a stale run (its key recorded as completed) and rolled back for a gap; a run to do
     * goes on with its watermark raised. Answers {@code null} when the guard lost a race (a deadlock, or H2's
     * concurrent insert of the watermark's row): rolled back, to be run again.
     */
    private JdbcWatermarks.Verdict guard(Handle handle, SequenceAdvance advance, boolean waitForGaps, int pass) {
        JdbcWatermarks.Verdict verdict;
        try {
            verdict = watermarks.guard(handle, advance, waitForGaps);
        } catch (RuntimeException e) {
            rollback(handle, e);
            if (pass < JdbcCalls.MAX_CONFLICT_RUNS && failures.isConflict(e)) {
                JdbcCalls.backOff(pass);
                return null;
            }
            throw failures.of("checking the sequence watermark in a transaction", e);
        }
        if (verdict == JdbcWatermarks.Verdict.GAP) {
            rollback(handle, null);
        } else if (verdict == JdbcWatermarks.Verdict.STALE) {
            try {
                handle.commit();
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("committing the transaction of a stale run", e);
            }
        }
        return verdict;
    }

    /** Runs the work in the open transaction, which completes {@code key} with {@code row}, and commits. */
    private void runAndCommit(Handle handle, Work work, StoreKey key, ClaimRow row) throws Exception {
        JdbcTransaction transaction = new JdbcTransaction(handle, key, row);
        try {
            work.run(transaction);
        } catch (Throwable t) {
            transaction.end();
            rollback(handle, t);
            throw t;
        }
        transaction.end();
        try {
            handle.commit();
        } catch (RuntimeException e) {
            rollback(handle, e);
            throw failures.of("committing the transaction", e);
        }
    }

    /** Rolls back; a failure to do so is added to {@code cause} when there is one, else thrown. */
    private void rollback(Handle handle, Throwable cause) {
        try {
            handle.rollback();
        } catch (RuntimeException e) {
            if (cause == null) {
                throw failures.of("rolling back the transaction", e);
            }
            cause.addSuppressed(e);
        }
    }
}
