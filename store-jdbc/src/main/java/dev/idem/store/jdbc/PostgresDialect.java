package dev.idem.store.jdbc;

import java.sql.Array;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.UnableToCreateStatementException;

/**
 * PostgreSQL: a batch claim is one statement. The requests travel as arrays (six parameters
 * whatever the batch size); {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE <takeover>} inserts or
 * takes over, and the same statement reads the rows it left alone from the statement's snapshot.
 */
final class PostgresDialect extends Dialect {

    private final String claim;
    private final String upsertInTransaction;

    PostgresDialect(String table) {
        super(table);
        // The lateral read sees the rows as they were when the statement began: enough for the keys the
        // upsert left alone, since a completed row stays completed until it expires. Unqualified names
        // in it resolve to its own table first. A key that row lacks (inserted concurrently, after the
        // snapshot) comes back empty, and the store claims it again. OFFSET 0 keeps that read a probe of the
        // primary key per request: folded into the join, it may become a hash join over the whole table,
        // which a plan cached while the table was small keeps doing as the table grows.
        this.claim = """
                WITH req AS (
                    SELECT * FROM unnest(CAST(? AS bytea[]), CAST(? AS bytea[]), CAST(? AS bytea[]), CAST(? AS bigint[]),
                                         CAST(? AS bigint[]), CAST(? AS bigint[]))
                        WITH ORDINALITY AS r(namespace, id, fingerprint, token, lease_us, expires_us, ord)
                ), taken AS (
                    %s
                    RETURNING k.namespace, k.id, k.token, k.attempts, k.state, k.fingerprint
                )
                SELECT COALESCE(t.token, k.token), COALESCE(t.attempts, k.attempts), COALESCE(t.state, k.state),
                       CASE WHEN t.id IS NULL THEN k.fingerprint ELSE t.fingerprint END,
                       CASE WHEN t.id IS NULL THEN k.lease_left END, t.id IS NOT NULL OR k.live
                FROM req
                LEFT JOIN taken t ON t.namespace = req.namespace AND t.id = req.id
                LEFT JOIN LATERAL (
                    SELECT %s FROM %s s WHERE t.id IS NULL AND s.namespace = req.namespace AND s.id = req.id OFFSET 0
                ) k(token, attempts, state, fingerprint, lease_left, live) ON true
                ORDER BY req.ord
                """.formatted(upsert("SELECT namespace, id, " + CLAIMED + ", token, 1, fingerprint, "
                        + plusMicros("now()", "lease_us") + ", " + plusMicros("now()", "expires_us")
                        + ", 0 FROM req ORDER BY ord", claimTakeover("k.")),
                        storedColumns(), table);
        this.upsertInTransaction = upsert("VALUES (?, ?, " + COMPLETED + ", ?, 1, ?, NULL, "
                + plusMicros("now()", "?") + ", 0)", transactionTakeover("k."));
    }

    /** Inserts {@code rows}, taking over the existing rows that {@code takeover} allows. */
    private String upsert(String rows, String takeover) {
        return "INSERT INTO " + table + " AS k (namespace, id, state, token, attempts, fingerprint, lease_until, expires_at,"
                + " starts) "
                + rows
                + " ON CONFLICT (namespace, id) DO UPDATE SET"
                + " attempts = CASE WHEN k.expires_at <= now() THEN 1 ELSE k.attempts + 1 END,"
                + " " + startsOnTakeover("k.") + ","
                + " state = excluded.state, token = excluded.token, fingerprint = excluded.fingerprint,"
                + " lease_until = excluded.lease_until, expires_at = excluded.expires_at"
                + " WHERE " + takeover;
    }

    @Override
    String product() {
        return "PostgreSQL";
    }

    @Override
    String driverClassName() {
        return "org.postgresql.Driver";
    }

    @Override
    List<String> createTable() {
        return List.of("""
                CREATE TABLE IF NOT EXISTS %s (
                    namespace   bytea       NOT NULL,
                    id          bytea       NOT NULL,
                    state       smallint    NOT NULL,
                    token       bigint      NOT NULL,
                    attempts    integer     NOT NULL,
                    fingerprint bytea,
                    lease_until timestamptz,
                    expires_at  timestamptz NOT NULL,
                    starts      integer     DEFAULT 0 NOT NULL,
                    PRIMARY KEY (namespace, id)
                )""".formatted(table),
                "CREATE INDEX IF NOT EXISTS " + table + "_expires_at ON " + table + " (expires_at)");
    }

    @Override
    String now() {
        return "now()";
    }

    @Override
    String plusMicros(String timestamp, String micros) {
        return "(" + timestamp + " + (" + micros + ") * interval '1 microsecond')";
    }

    @Override
    String microsBetween(String from, String to) {
        return "CAST(extract(epoch FROM (" + to + ") - (" + from + ")) * 1000000 AS bigint)";
    }

    @Override
    List<StoredRow> claim(Handle handle, List<ClaimRow> rows) {
        int n = rows.size();
        byte[][] namespaces = new byte[n][];
        byte[][] ids = new byte[n][];
        byte[][] fingerprints = new byte[n][];
        Long[] tokens = new Long[n];
        Long[] leases = new Long[n];
        Long[] expiries = new Long[n];
        for (int i = 0; i < n; i++) {
            ClaimRow row = rows.get(i);
            namespaces[i] = row.namespace();
            ids[i] = row.id();
            fingerprints[i] = row.fingerprint();
            tokens[i] = row.token();
            leases[i] = row.leaseMicros();
            expiries[i] = row.expiresMicros();
        }
        List<StoredRow> stored = new ArrayList<>(n);
        handle.createQuery(claim)
                .bindBySqlType(0, array(handle, "bytea", namespaces), Types.ARRAY)
                .bindBySqlType(1, array(handle, "bytea", ids), Types.ARRAY)
                .bindBySqlType(2, array(handle, "bytea", fingerprints), Types.ARRAY)
                .bindBySqlType(3, array(handle, "int8", tokens), Types.ARRAY)
                .bindBySqlType(4, array(handle, "int8", leases), Types.ARRAY)
                .bindBySqlType(5, array(handle, "int8", expiries), Types.ARRAY)
                .map((rs, ctx) -> {
                    rs.getLong(1);
                    return rs.wasNull() ? null : StoredRow.read(rs, 1);
                })
                .forEach(stored::add);
        return stored;
    }

    /** The update returns the count it left: one statement, no transaction. */
    @Override
    int recordStart(Handle handle, byte[] namespace, byte[] id, long token) {
        return handle.createQuery(countStart() + " RETURNING starts")
                .bind(0, namespace).bind(1, id).bind(2, token)
                .mapTo(Integer.class)
                .findOne()
                .orElse(0);
    }

    private static Array array(Handle handle, String type, Object[] elements) {
        try {
            return handle.getConnection().createArrayOf(type, elements);
        } catch (SQLException e) {
            throw new UnableToCreateStatementException("Could not make a " + type + " array", e);
        }
    }

    @Override
    void upsertInTransaction(Handle handle, ClaimRow row) {
        handle.createUpdate(upsertInTransaction)
                .bind(0, row.namespace())
                .bind(1, row.id())
                .bind(2, row.token())
                .bind(3, row.fingerprint())
                .bind(4, row.expiresMicros())
                .execute();
    }

    /**
     * Deletes through the primary key of a bounded, skip-locked selection. The outer {@code expires_at}
     * test is checked again on the row's latest version, so a row that a claim took over while the
     * purge waited for it is kept.
     */
    @Override
    String purge() {
        return "DELETE FROM " + table + " WHERE (namespace, id) IN (SELECT namespace, id FROM " + table
                + " WHERE expires_at < now() ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)"
                + " AND expires_at < now()";
    }
}
