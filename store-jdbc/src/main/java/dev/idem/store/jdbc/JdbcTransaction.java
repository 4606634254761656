package dev.idem.store.jdbc;

import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.sql.Connection;
import org.jdbi.v3.core.Handle;

/**
 * The transaction a handler's work runs in: the Jdbi {@link Handle} and its {@link Connection}. Valid
 * only while the work runs; the store commits or rolls back, so the handler must not.
 */
final class JdbcTransaction implements StoreTransaction {

    private volatile Handle handle;

    JdbcTransaction(Handle handle) {
        this.handle = handle;
    }

    /** @throws IllegalStateException once the work has returned: the transaction is the store's again */
    @Override
    public <T> T unwrap(Class<T> type) {
        Handle h = handle;
        if (h == null) {
            throw new IllegalStateException("The store transaction has ended: use it only while the handler runs");
        }
        if (type.isInstance(h)) {
            return type.cast(h);
        }
        Connection connection = h.getConnection();
        return type.isInstance(connection) ? type.cast(connection) : null;
    }

    void end() {
        handle = null;
    }
}
