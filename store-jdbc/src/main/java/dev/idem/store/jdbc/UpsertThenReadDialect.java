package dev.idem.store.jdbc;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.SqlStatement;

/**
 * The claim of databases whose upsert cannot return the rows it left alone (H2, MySQL): one
 * multi-row upsert, then one read of the batch's rows. Both run in auto-commit: the read need not
 * see the upsert's moment, only a later one, and the token tells whether the upsert took a key.
 * A key that vanished in between (released, purged) comes back {@code null} and is claimed again.
 */
abstract class UpsertThenReadDialect extends Dialect {

    private final Map<Integer, String> upserts = new ConcurrentHashMap<>();
    private final Map<Integer, String> reads = new ConcurrentHashMap<>();

    UpsertThenReadDialect(String table) {
        super(table);
    }

    /**
     * An upsert of {@code rows} rows, each bound by {@link #bindRow}, taking over the rows a claim may
     * take over, or with {@code transactional} the rows a transaction may take over.
     */
    abstract String upsert(int rows, boolean transactional);

    /** Reads the stored columns, then namespace and id, of the keys given as {@code rows} (namespace, id) pairs. */
    String read(int rows) {
        StringBuilder sql = new StringBuilder("SELECT ").append(storedColumns()).append(", namespace, id FROM ")
                .append(table).append(" WHERE (namespace, id) IN (");
        for (int i = 0; i < rows; i++) {
            sql.append(i == 0 ? "(?, ?)" : ", (?, ?)");
        }
        return sql.append(')').toString();
    }

    /** Binds one row's parameters from {@code position}; returns the next free position. */
    int bindRow(SqlStatement<?> statement, int position, ClaimRow row) {
        statement.bind(position, row.namespace())
                .bind(position + 1, row.id())
                .bind(position + 2, row.state())
                .bind(position + 3, row.token())
                .bind(position + 4, row.fingerprint())
                .bind(position + 5, row.leaseMicros())
                .bind(position + 6, row.expiresMicros());
        return position + 7;
    }

    /**
     * Claims in statements whose row counts come from a small set (1 to {@value #SIZE_STEP}, then
     * multiples of it): a statement's text grows with its rows, and each distinct text is cached (here,
     * by Jdbi, by the driver), so arbitrary batch sizes would fill the caches with near-copies. A batch
     * takes at most two statements: its largest multiple of the step, then the rest.
     */
    @Override
    final List<StoredRow> claim(Handle handle, List<ClaimRow> rows) {
        int n = rows.size();
        int rest = n % SIZE_STEP;
        if (n <= SIZE_STEP || rest == 0) {
            return claimExactly(handle, rows);
        }
        List<StoredRow> stored = new ArrayList<>(claimExactly(handle, rows.subList(0, n - rest)));
        stored.addAll(claimExactly(handle, rows.subList(n - rest, n)));
        return stored;
    }

    static final int SIZE_STEP = 16;

    /** Claims {@code rows} in one upsert, then reads them back. */
    List<StoredRow> claimExactly(Handle handle, List<ClaimRow> rows) {
        int n = rows.size();
        var upsert = handle.createUpdate(claimUpsert(n));
        int position = 0;
        for (ClaimRow row : rows) {
            position = bindRow(upsert, position, row);
        }
        upsert.execute();

        var read = handle.createQuery(reads.computeIfAbsent(n, this::read));
        position = 0;
        for (ClaimRow row : rows) {
            read.bind(position++, row.namespace()).bind(position++, row.id());
        }
        return inRequestOrder(rows, read);
    }

    /** Runs {@code query}, whose rows hold the stored columns then namespace and id, and orders them as {@code rows}. */
    static List<StoredRow> inRequestOrder(List<ClaimRow> rows, Query query) {
        Map<ByteBuffer, StoredRow> byKey = new HashMap<>(rows.size() * 2);
        query.map((rs, ctx) -> {
            byKey.put(key(rs.getBytes(7), rs.getBytes(8)), StoredRow.read(rs, 1));
            return null;
        }).forEach(ignored -> { });
        List<StoredRow> stored = new ArrayList<>(rows.size());
        for (ClaimRow row : rows) {
            stored.add(byKey.get(key(row.namespace(), row.id())));
        }
        return stored;
    }

    /** The upsert of {@code rows} rows for a claim, made once per size. */
    final String claimUpsert(int rows) {
        return upserts.computeIfAbsent(rows, size -> upsert(size, false));
    }

    @Override
    final void upsertInTransaction(Handle handle, ClaimRow row) {
        var upsert = handle.createUpdate(upserts.computeIfAbsent(-1, size -> upsert(1, true)));
        bindRow(upsert, 0, row);
        upsert.execute();
    }

    /** A map key for namespace and id that cannot confuse one split for another. */
    private static ByteBuffer key(byte[] namespace, byte[] id) {
        return ByteBuffer.allocate(4 + namespace.length + id.length).putInt(namespace.length).put(namespace).put(id)
                .flip();
    }
}
