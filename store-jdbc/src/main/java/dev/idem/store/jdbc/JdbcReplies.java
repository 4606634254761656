package dev.idem.store.jdbc;

import dev.idem.spi.CompletionRequest;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredReply;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;

/**
 * The replies of a {@link JdbcDedupStore} ({@link ReplyStore}), on its {@link ReplyTable}: what each call does on a
 * handle; the store gets the handle, runs again what lost a race, and turns failures into store errors.
 *
 * <ul>
 * <li>{@link #write}: inside the transaction that completes a batch's keys ({@link JdbcWatermarks#completeAndRaise}),
 *     once the keys are written: for each key completed now with a reply, its reply row is deleted and inserted anew
 *     with the completion's token, as two JDBC batches. The key's row, locked by its completion until the commit,
 *     keeps every other writer of that reply out.</li>
 * <li>{@link #record}: the same for one key, on the handle of a transactional run, with the token the run completes
 *     its key with ({@link JdbcTransaction#completing}), so that it commits or rolls back (to a group member's
 *     savepoint too) with the run.</li>
 * <li>{@link #read}: one statement joining the keys row and its reply on the token; it locks nothing.</li>
 * </ul>
 * Thread-safe: it holds nothing but SQL.
 */
final class JdbcReplies {

    private final ReplyTable table;

    JdbcReplies(ReplyTable table) {
        this.table = table;
    }

    ReplyTable table() {
        return table;
    }

    /** Whether any of {@code rows}, which point into {@code requests}, comes with a reply. */
    static boolean anyReply(List<ClaimRow> rows, List<CompletionRequest> requests) {
        for (ClaimRow row : rows) {
            if (requests.get(row.index()).reply() != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * Writes the replies of the rows completed now ({@code fresh}) that come with one, in the caller's open transaction,
     * which wrote their keys completed: a retried completion keeps the reply its first one stored, and a retention of
     * zero keeps none.
     *
     * @param rows the rows completed, which point into {@code requests}
     */
    void write(Handle handle, List<ClaimRow> rows, List<CompletionRequest> requests, boolean[] fresh) {
        List<ClaimRow> replied = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            ClaimRow row = rows.get(i);
            if (fresh[i] && row.expiresMicros() > 0 && requests.get(row.index()).reply() != null) {
                replied.add(row);
            }
        }
        if (replied.isEmpty()) {
            return;
        }
        PreparedBatch delete = handle.prepareBatch(table.deleteKey());
        for (ClaimRow row : replied) {
            delete.bind(0, row.namespace()).bind(1, row.id()).add();
        }
        delete.execute();
        PreparedBatch insert = handle.prepareBatch(table.insert());
        for (ClaimRow row : replied) {
            StoredReply reply = requests.get(row.index()).reply();
            insert.bind(0, row.namespace()).bind(1, row.id()).bind(2, row.token())
                    .bind(3, HeaderCodec.encode(reply.headers())).bind(4, reply.payload()).bind(5, row.expiresMicros())
                    .add();
        }
        insert.execute();
    }

    /**
     * Records {@code reply} for {@code key} in the transactional run's transaction, replacing one recorded before in
     * it.
     *
     * @throws IllegalArgumentException when {@code transaction} is not a run's of this store, or does not complete
     *         {@code key}
     * @throws IllegalStateException once the run's work has returned
     * @throws RuntimeException what the database threw
     */
    void record(StoreTransaction transaction, StoreKey key, StoredReply reply) {
        if (!(transaction instanceof JdbcTransaction run)) {
            throw new IllegalArgumentException("The transaction " + transaction + " is not one the JDBC store handed a"
                    + " work: pass the one its runOnce or runGroup handed the work");
        }
        Handle handle = run.handle();
        ClaimRow row = run.completing(key);
        if (row == null) {
            throw new IllegalArgumentException("The transaction does not complete key '" + key.id()
                    + "' in namespace '" + key.namespace() + "': a reply is recorded for the run's own key");
        }
        handle.createUpdate(table.deleteKey()).bind(0, row.namespace()).bind(1, row.id()).execute();
        if (row.expiresMicros() > 0) {
            handle.createUpdate(table.insert())
                    .bind(0, row.namespace()).bind(1, row.id()).bind(2, row.token())
                    .bind(3, HeaderCodec.encode(reply.headers())).bind(4, reply.payload()).bind(5, row.expiresMicros())
                    .execute();
        }
    }

    /** The reply of the key's live completion. */
    Optional<StoredReply> read(Handle handle, StoreKey key) {
        return handle.createQuery(table.read()).bind(0, ClaimRow.namespace(key)).bind(1, ClaimRow.id(key))
                .map((rs, ctx) -> new StoredReply(rs.getBytes(2), HeaderCodec.decode(rs.getString(1))))
                .findOne();
    }
}
