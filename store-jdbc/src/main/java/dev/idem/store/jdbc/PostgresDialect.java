package dev.idem.store.jdbc;

import java.nio.ByteBuffer;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.Query;
import org.jdbi.v3.core.statement.StatementContext;
import org.jdbi.v3.core.statement.StatementCustomizer;
import org.jdbi.v3.core.statement.UnableToCreateStatementException;
import org.postgresql.PGStatement;

/**
 * PostgreSQL: a batch claim is one statement. The requests travel as arrays (six parameters
 * whatever the batch size); {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE <takeover>} inserts or
 * takes over, and the same statement reads the rows it left alone from the statement's snapshot. A batch
 * completion is one statement too, {@code UPDATE ... FROM unnest(...) RETURNING}, followed by a read only
 * for the keys it left alone.
 */
final class PostgresDialect extends Dialect {

    private final String claim;
    private final String completeAll;
    private final String upsertInTransaction;
    private final String lockRows;
    private final String completedByAny;

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
        // The update returns the rows it completed. Whether a row it left alone was completed by its token
        // before (a retry) is read by a statement of its own: this statement's snapshot may predate a
        // completion of the same key that it then waited for, and would show the row still claimed.
        this.completeAll = """
                UPDATE %1$s AS k SET state = %2$d, lease_until = NULL, expires_at = %3$s
                FROM unnest(CAST(? AS bytea[]), CAST(? AS bytea[]), CAST(? AS bigint[]), CAST(? AS bigint[]))
                    AS req(namespace, id, token, retention_us)
                WHERE k.namespace = req.namespace AND k.id = req.id AND k.token = req.token AND k.state = %4$d
                  AND k.expires_at > now()
                RETURNING k.namespace, k.id, k.token
                """.formatted(table, COMPLETED, plusMicros("now()", "req.retention_us"), CLAIMED);
        // Keys travel as arrays and each is a probe of the primary key, locked in the arrays' order (the caller
        // sorts them). Listed as (namespace, id) pairs instead, the planner factors the shared namespace out of the
        // pairs and may AND a scan of the whole namespace with the pairs' probes: tens of milliseconds per statement
        // at 100,000 keys, growing with the table.
        String probe = """
                SELECT k.* FROM unnest(CAST(? AS bytea[]), CAST(? AS bytea[])) WITH ORDINALITY AS req(namespace, id, ord)
                CROSS JOIN LATERAL (
                    SELECT %s FROM %s s WHERE s.namespace = req.namespace AND s.id = req.id%s
                ) k
                ORDER BY req.ord
                """;
        this.lockRows = probe.formatted(storedColumns() + ", namespace, id", table, " FOR UPDATE");
        this.completedByAny = probe.formatted("namespace, id, token", table,
                " AND s.state = " + COMPLETED + " AND s.expires_at > now()");
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

    /** pgJDBC counts in seconds; loginTimeout bounds the whole connect, startup and authentication included. */
    @Override
    Map<String, String> driverTimeouts(Duration connect, Duration socket) {
        return Map.of("connectTimeout", seconds(connect), "loginTimeout", seconds(connect),
                "socketTimeout", seconds(socket));
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

    /**
     * One statement for the batch, whose {@code RETURNING} names the rows it completed; only when it left some
     * alone does one read follow ({@link #alreadyCompleted}).
     */
    @Override
    boolean[] completeAll(Handle handle, List<ClaimRow> rows) {
        int n = rows.size();
        byte[][] namespaces = new byte[n][];
        byte[][] ids = new byte[n][];
        Long[] tokens = new Long[n];
        Long[] retentions = new Long[n];
        for (int i = 0; i < n; i++) {
            ClaimRow row = rows.get(i);
            namespaces[i] = row.namespace();
            ids[i] = row.id();
            tokens[i] = row.token();
            retentions[i] = row.expiresMicros();
        }
        Set<ByteBuffer> completed = new HashSet<>();
        handle.createQuery(completeAll)
                .addCustomizer(PLANNED_EACH_TIME)
                .bindBySqlType(0, array(handle, "bytea", namespaces), Types.ARRAY)
                .bindBySqlType(1, array(handle, "bytea", ids), Types.ARRAY)
                .bindBySqlType(2, array(handle, "int8", tokens), Types.ARRAY)
                .bindBySqlType(3, array(handle, "int8", retentions), Types.ARRAY)
                .map((rs, ctx) -> rowKey(rs.getBytes(1), rs.getBytes(2), rs.getLong(3)))
                .forEach(completed::add);
        boolean[] done = new boolean[n];
        for (int i = 0; i < n; i++) {
            ClaimRow row = rows.get(i);
            done[i] = completed.contains(rowKey(row.namespace(), row.id(), row.token()));
        }
        return alreadyCompleted(handle, rows, done);
    }

    /**
     * Has the driver send the statement unnamed, so that the server plans it for the batch at hand and the
     * table as it is now. Prepared and reused, the server would settle on a generic plan made once; made while
     * the table was small, that plan joins the batch to the table by scanning the whole table, and keeps doing
     * so as the table grows, until an {@code ANALYZE} happens to replace it. Planning costs about a
     * millisecond per statement, against a scan that grows with the table.
     */
    private static final StatementCustomizer PLANNED_EACH_TIME = new StatementCustomizer() {
        @Override
        public void beforeExecution(PreparedStatement statement, StatementContext ctx) throws SQLException {
            statement.unwrap(PGStatement.class).setPrepareThreshold(0);
        }
    };

    /** The rows are locked in the order of {@code rows}, which the caller sorts by key. */
    @Override
    Query lockRows(Handle handle, List<ClaimRow> rows) {
        return byKeys(handle, lockRows, rows);
    }

    @Override
    Query completedByAny(Handle handle, List<ClaimRow> rows) {
        return byKeys(handle, completedByAny, rows);
    }

    /** {@code sql}, whose two parameters are the arrays of the rows' namespaces and ids. */
    private static Query byKeys(Handle handle, String sql, List<ClaimRow> rows) {
        int n = rows.size();
        byte[][] namespaces = new byte[n][];
        byte[][] ids = new byte[n][];
        for (int i = 0; i < n; i++) {
            namespaces[i] = rows.get(i).namespace();
            ids[i] = rows.get(i).id();
        }
        return handle.createQuery(sql)
                .bindBySqlType(0, array(handle, "bytea", namespaces), Types.ARRAY)
                .bindBySqlType(1, array(handle, "bytea", ids), Types.ARRAY);
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
        return purgeExpired(table);
    }

    /**
     * Deletes at most {@code ?} rows of {@code table} whose {@code expires_at} passed: the row versions of a bounded,
     * skip-locked selection, made once as an {@code ARRAY(SELECT ctid ...)} init plan (an {@code IN (SELECT ...
     * LIMIT ...)} may be run again for each row of a join and delete more than the bound), their {@code expires_at}
     * tested again. The selected rows are locked until the delete, so their versions cannot change in between.
     */
    static String purgeExpired(String table) {
        return "DELETE FROM " + table + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " + table
                + " WHERE expires_at < now() ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED))"
                + " AND expires_at < now()";
    }

    /**
     * PostgreSQL's {@code DELETE} has no {@code LIMIT}: it deletes by primary key the IDs of a bounded, skip-locked
     * selection, and tests each row's latest version again, so a row a claim changed meanwhile is kept. The
     * selection is an {@code ARRAY(SELECT ...)}, which PostgreSQL runs once, as an init plan: an
     * {@code IN (SELECT ... LIMIT ...)} may be run again for each row of a join and delete more than the limit. A
     * row another transaction holds is skipped, not waited for. Parameters: namespace, namespace, microseconds,
     * limit, microseconds.
     */
    @Override
    String purgeCompleted() {
        return "DELETE FROM " + table + " WHERE namespace = ? AND id = ANY(ARRAY(SELECT id FROM " + table + " WHERE "
                + completedWithin() + " ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)) AND state = " + COMPLETED
                + " AND expires_at > now() AND expires_at < " + plusMicros("now()", "?");
    }

    @Override
    int purgeCompleted(Handle handle, byte[] namespace, long micros, int limit) {
        return handle.createUpdate(purgeCompleted())
                .bind(0, namespace).bind(1, namespace).bind(2, micros).bind(3, limit).bind(4, micros)
                .execute();
    }
}
