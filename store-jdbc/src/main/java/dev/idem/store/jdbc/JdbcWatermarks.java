package dev.idem.store.jdbc;

import dev.idem.spi.CompletionRequest;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import java.util.ArrayList;
import java.util.List;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;

/**
 * The sequence guard of a {@link JdbcDedupStore}, on its {@link WatermarkTable}: what each call does on a handle;
 * the store gets the handle, runs again what lost a race, and turns failures into store errors.
 *
 * <ul>
 * <li>{@link #read}: one primary-key read of a live row.</li>
 * <li>{@link #completeAndRaise}: in one transaction, the keys' completions as one JDBC batch (answered per key as
 *     {@code complete} answers; a key the batch left alone costs a read, as in {@link Dialect#completeAll}), then
 *     the watermarks of the keys completed raised as one JDBC batch of upserts, and the replies of the keys completed
 *     now written ({@link JdbcReplies#write}). All commit together or nothing does. Every database gets this same
 *     JDBC batch rather than its dialect's one-statement completion, which on MariaDB commits a transaction of its
 *     own.</li>
 * <li>{@link #guard}: inside a transactional run's transaction, after the key's row is written and locked,
 *     locks the aggregate's watermark row (inserting a forgotten one if absent) and decides the run.</li>
 * </ul>
 * Thread-safe: it holds nothing but SQL.
 */
final class JdbcWatermarks {

    /** What {@link #guard} decided for a transactional run. */
    enum Verdict {
        /** The watermark is raised to the run's number, in the run's transaction: run the work, then commit. */
        RUN(Outcome.COMMITTED),
        /** The watermark is at or above the run's number: commit the key as completed, without the work. */
        STALE(Outcome.STALE),
        /** A gap before the run's number, waited for: roll back everything. */
        GAP(Outcome.SEQUENCE_GAP);

        final Outcome outcome;

        Verdict(Outcome outcome) {
            this.outcome = outcome;
        }
    }

    private final Dialect dialect;
    private final WatermarkTable table;

    JdbcWatermarks(Dialect dialect) {
        this.dialect = dialect;
        this.table = WatermarkTable.of(dialect);
    }

    /** Whether any of {@code rows}, which point into {@code requests}, advances a watermark. */
    static boolean anyAdvance(List<ClaimRow> rows, List<CompletionRequest> requests) {
        for (ClaimRow row : rows) {
            if (requests.get(row.index()).advance() != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * Checks that the table can hold the advance's aggregate, before anything is written.
     *
     * @throws IllegalArgumentException for a namespace or an ID longer than the table holds, or not valid Unicode
     */
    static void requireStorable(SequenceAdvance advance) {
        ClaimRow.namespace(advance.aggregate());
        ClaimRow.id(advance.aggregate());
    }

    /** The aggregate's watermark, or 0 when none is remembered. */
    long read(Handle handle, StoreKey aggregate) {
        return table.read(handle, aggregate);
    }

    /**
     * Completes {@code rows}, raises the watermarks of those completed and writes the replies of those completed now,
     * in one transaction of its own; answers per row whether the key is now completed with the row's token, as
     * {@link Dialect#completeAll} does.
     *
     * @param rows at most {@link Dialect#MAX_ROWS_PER_STATEMENT}, distinct, sorted by key
     * @param requests the batch the rows' {@link ClaimRow#index()} point into, for their advances and replies
     */
    boolean[] completeAndRaise(Handle handle, List<ClaimRow> rows, List<CompletionRequest> requests,
            JdbcReplies replies) {
        handle.begin();
        try {
            PreparedBatch batch = handle.prepareBatch(dialect.complete());
            for (ClaimRow row : rows) {
                batch.bind(0, row.expiresMicros()).bind(1, row.namespace()).bind(2, row.id()).bind(3, row.token())
                        .add();
            }
            int[] counts = batch.execute();
            boolean[] done = new boolean[rows.size()];
            // Completed by this call, not by an earlier one of the same owner: only those store their replies.
            boolean[] fresh = new boolean[rows.size()];
            if (countsEachRow(counts, done.length)) {
                for (int i = 0; i < done.length; i++) {
                    done[i] = counts[i] > 0;
                    fresh[i] = done[i];
                }
                // A row the batch left alone may be a retry whose key the token completed before.
                done = dialect.alreadyCompleted(handle, rows, done);
            } else {
                // A driver that does not count each row (MariaDB's bulk mode) leaves no way to tell which it
                // completed: start again and complete them one by one, as Dialect.completeAll does.
                handle.rollback();
                handle.begin();
                for (int i = 0; i < done.length; i++) {
                    ClaimRow row = rows.get(i);
                    fresh[i] = handle.createUpdate(dialect.complete())
                            .bind(0, row.expiresMicros()).bind(1, row.namespace()).bind(2, row.id()).bind(3, row.token())
                            .execute() > 0;
                    done[i] = fresh[i]
                            || dialect.completeOne(handle, row.namespace(), row.id(), row.token(), row.expiresMicros());
                }
            }
            List<SequenceAdvance> advances = new ArrayList<>();
            for (int i = 0; i < done.length; i++) {
                SequenceAdvance advance = requests.get(rows.get(i).index()).advance();
                if (done[i] && advance != null) {
                    advances.add(advance);
                }
            }
            table.raise(handle, advances);
            replies.write(handle, rows, requests, fresh);
            handle.commit();
            return done;
        } catch (RuntimeException e) {
            try {
                handle.rollback();
            } catch (RuntimeException rollback) {
                e.addSuppressed(rollback);
            }
            throw e;
        }
    }

    private static boolean countsEachRow(int[] counts, int rows) {
        if (counts.length != rows) {
            return false;
        }
        for (int count : counts) {
            if (count < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Inside a transactional run's open transaction, which holds the run's key: locks the aggregate's watermark
     * and decides. At or above the number: {@link Verdict#STALE}, the watermark's retention renewed; beyond a gap
     * while {@code waitForGaps}: {@link Verdict#GAP}, nothing written that the caller's rollback does not undo;
     * otherwise {@link Verdict#RUN}, the watermark raised to the number. The caller commits or rolls back.
     *
     * @throws RuntimeException what the database threw; the caller rolls back (a lost race may run again)
     */
    Verdict guard(Handle handle, SequenceAdvance advance, boolean waitForGaps) {
        long watermark = table.lock(handle, advance.aggregate());
        long number = advance.number();
        if (watermark >= number) {
            table.raise(handle, List.of(advance));
            return Verdict.STALE;
        }
        if (waitForGaps && watermark < number - 1) {
            return Verdict.GAP;
        }
        table.raise(handle, List.of(advance));
        return Verdict.RUN;
    }
}
