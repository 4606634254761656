package dev.idem.store.jdbc;

import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.sql.Connection;
import java.util.Map;
import org.jdbi.v3.core.Handle;

/**
 * The transaction a handler's work runs in: the Jdbi {@link Handle} and its {@link Connection}, and the keys the
 * transaction completes with the rows it writes them with (their tokens and retentions), so that a reply recorded in
 * it ({@link JdbcReplies#record}) names the token its key will hold once the transaction commits. Valid only while
 * the work runs; the store commits or rolls back, so the handler must not.
 */
final class JdbcTransaction implements StoreTransaction {

    private volatile Handle handle;
    private final Map<StoreKey, ClaimRow> completing;

    /** A transaction that completes no key a reply may be recorded for. */
    JdbcTransaction(Handle handle) {
        this(handle, Map.of());
    }

    /** A transaction that completes {@code key} with {@code row}. */
    JdbcTransaction(Handle handle, StoreKey key, ClaimRow row) {
        this(handle, Map.of(key, row));
    }

    /** A transaction that completes each key of {@code completing} with its row. */
    JdbcTransaction(Handle handle, Map<StoreKey, ClaimRow> completing) {
        this.handle = handle;
        this.completing = Map.copyOf(completing);
    }

    /** @throws IllegalStateException once the work has returned: the transaction is the store's again */
    @Override
    public <T> T unwrap(Class<T> type) {
        Handle h = handle();
        if (type.isInstance(h)) {
            return type.cast(h);
        }
        Connection connection = h.getConnection();
        return type.isInstance(connection) ? type.cast(connection) : null;
    }

    /**
     * The open transaction's handle.
     *
     * @throws IllegalStateException once the work has returned: the transaction is the store's again
     */
    Handle handle() {
        Handle h = handle;
        if (h == null) {
            throw new IllegalStateException("The store transaction has ended: use it only while the handler runs");
        }
        return h;
    }

    /** The row the transaction completes {@code key} with, or {@code null} when it does not complete it. */
    ClaimRow completing(StoreKey key) {
        return completing.get(key);
    }

    void end() {
        handle = null;
    }
}
