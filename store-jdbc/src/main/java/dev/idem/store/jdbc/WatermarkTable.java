package dev.idem.store.jdbc;

import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreKey;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;

/**
 * The table of the sequence guard's watermarks ({@link SequencedDedupStore}) and its SQL, per
 * database. It is named after the keys table, {@code <table>_seq}, lives beside it, and keeps time as the keys
 * table does: on the database's clock, in the same column types. Immutable and thread-safe.
 *
 * <pre>
 * namespace    binary, up to 255 bytes   } primary key: the pipeline and the aggregate's ID as UTF-8 bytes,
 * aggregate    binary, up to 512 bytes   } compared exactly, as the keys table's namespace and id
 * watermark    the highest sequence number completed for the aggregate
 * expires_at   when the watermark is forgotten: its retention after its last change; indexed for the purge
 * </pre>
 * A row whose {@code expires_at} has passed counts as absent before the purge deletes it: a raise then sets the
 * number afresh instead of keeping the forgotten one. Every raise sets {@code expires_at} again.
 *
 * <p>Locks: a raise is an upsert, which locks the aggregate's row; callers that also complete keys in the same
 * transaction write the keys first and then the watermarks, each sorted by their bytes, so no two transactions
 * wait for each other in opposite orders.
 */
abstract class WatermarkTable {

    /** What the watermark table's name adds to the keys table's. */
    static final String SUFFIX = "_seq";

    /** The columns every dialect's table has, in DDL order; {@code schema: validate} checks them. */
    static final List<String> COLUMNS = List.of("namespace", "aggregate", "watermark", "expires_at");

    /** The primary key's columns. */
    static final List<String> KEY = List.of("namespace", "aggregate");

    final String name;
    final Dialect dialect;

    private WatermarkTable(Dialect dialect) {
        this.dialect = dialect;
        this.name = dialect.table + SUFFIX;
    }

    /** The watermark table beside the keys table of {@code dialect}. */
    static WatermarkTable of(Dialect dialect) {
        if (dialect instanceof PostgresDialect) {
            return new Postgres(dialect);
        }
        if (dialect instanceof MariaDbDialect) {
            return new MariaDb(dialect);
        }
        if (dialect instanceof H2Dialect) {
            return new H2(dialect);
        }
        throw new IllegalArgumentException("No watermark table for " + dialect);
    }

    /** Statements that create the table and its index if absent. */
    abstract List<String> createTable();

    /**
     * Inserts the aggregate's row, raised to {@code ?} and kept for {@code ?} µs from now, or raises an existing one:
     * to the greater of both numbers, or to the new one if the row was forgotten; {@code expires_at} set anew either
     * way. Parameters: namespace, aggregate, number, retention micros.
     */
    abstract String raise();

    /**
     * Inserts the aggregate's row if it has none, as one already forgotten (number 0, expiring now), so that
     * {@link #lock()} finds a row to lock; leaves an existing row alone. Parameters: namespace, aggregate.
     */
    abstract String insertIfAbsent();

    /** Deletes at most the given number of forgotten rows. Parameter: the batch size. */
    abstract String purge();

    /** Reads the aggregate's live watermark. Parameters: namespace, aggregate. */
    final String read() {
        return "SELECT watermark FROM " + name + " WHERE namespace = ? AND aggregate = ? AND expires_at > "
                + dialect.now();
    }

    /** Locks the aggregate's row and reads its number and whether it is live. Parameters: namespace, aggregate. */
    final String lock() {
        return "SELECT watermark, expires_at > " + dialect.now() + " FROM " + name
                + " WHERE namespace = ? AND aggregate = ? FOR UPDATE";
    }

    // ------------------------------------------------------------------ statements run

    /** The aggregate's watermark, or 0 when none is remembered. */
    long read(Handle handle, StoreKey aggregate) {
        return handle.createQuery(read())
                .bind(0, ClaimRow.namespace(aggregate))
                .bind(1, ClaimRow.id(aggregate))
                .mapTo(Long.class)
                .findOne()
                .orElse(0L);
    }

    /**
     * Within the caller's transaction: locks the aggregate's row, inserting a forgotten one if it has none, and
     * answers its live watermark (0 if forgotten). The lock is held until the transaction ends, so two
     * transactions of one aggregate serialize here; a row inserted here is left forgotten unless raised.
     */
    long lock(Handle handle, StoreKey aggregate) {
        byte[] namespace = ClaimRow.namespace(aggregate);
        byte[] id = ClaimRow.id(aggregate);
        handle.createUpdate(insertIfAbsent()).bind(0, namespace).bind(1, id).execute();
        return handle.createQuery(lock())
                .bind(0, namespace).bind(1, id)
                .map((rs, ctx) -> rs.getBoolean(2) ? rs.getLong(1) : 0L)
                .one();
    }

    /**
     * Raises the watermarks of {@code advances} (see {@link #raise()}), one statement per aggregate, as one JDBC
     * batch in aggregate order: several advances of one aggregate become one raise to the highest number, kept for
     * the longest retention.
     */
    void raise(Handle handle, List<SequenceAdvance> advances) {
        if (advances.isEmpty()) {
            return;
        }
        Map<ByteBuffer, Raise> byAggregate = new LinkedHashMap<>();
        for (SequenceAdvance advance : advances) {
            Raise raise = Raise.of(advance);
            byAggregate.merge(raise.key(), raise, Raise::merge);
        }
        List<Raise> raises = new ArrayList<>(byAggregate.values());
        raises.sort(Comparator.naturalOrder());
        PreparedBatch batch = handle.prepareBatch(raise());
        for (Raise raise : raises) {
            batch.bind(0, raise.namespace).bind(1, raise.aggregate).bind(2, raise.number).bind(3, raise.keepMicros)
                    .add();
        }
        batch.execute();
    }

    /** One aggregate's raise, encoded for the table. */
    private record Raise(byte[] namespace, byte[] aggregate, long number, long keepMicros) implements Comparable<Raise> {

        static Raise of(SequenceAdvance advance) {
            return new Raise(ClaimRow.namespace(advance.aggregate()), ClaimRow.id(advance.aggregate()),
                    advance.number(), ClaimRow.micros(advance.retention()));
        }

        ByteBuffer key() {
            return ByteBuffer.allocate(4 + namespace.length + aggregate.length).putInt(namespace.length).put(namespace)
                    .put(aggregate).flip();
        }

        Raise merge(Raise other) {
            return new Raise(namespace, aggregate, Math.max(number, other.number), Math.max(keepMicros, other.keepMicros));
        }

        /** By namespace then aggregate, bytes unsigned: one lock order for every transaction. */
        @Override
        public int compareTo(Raise other) {
            int c = Arrays.compareUnsigned(namespace, other.namespace);
            return c != 0 ? c : Arrays.compareUnsigned(aggregate, other.aggregate);
        }
    }

    // ------------------------------------------------------------------ per database

    /** PostgreSQL: {@code INSERT ... ON CONFLICT}; {@code now()} is the transaction's start, as for the keys. */
    private static final class Postgres extends WatermarkTable {

        Postgres(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  bytea       NOT NULL,
                        aggregate  bytea       NOT NULL,
                        watermark  bigint      NOT NULL,
                        expires_at timestamptz NOT NULL,
                        PRIMARY KEY (namespace, aggregate)
                    )""".formatted(name),
                    "CREATE INDEX IF NOT EXISTS " + name + "_expires_at ON " + name + " (expires_at)");
        }

        @Override
        String raise() {
            return "INSERT INTO " + name + " AS w (namespace, aggregate, watermark, expires_at) VALUES (?, ?, ?, "
                    + dialect.plusMicros("now()", "CAST(? AS bigint)") + ") ON CONFLICT (namespace, aggregate) DO UPDATE"
                    + " SET watermark = CASE WHEN w.expires_at <= now() THEN excluded.watermark"
                    + " ELSE GREATEST(w.watermark, excluded.watermark) END, expires_at = excluded.expires_at";
        }

        @Override
        String insertIfAbsent() {
            return "INSERT INTO " + name + " (namespace, aggregate, watermark, expires_at) VALUES (?, ?, 0, now())"
                    + " ON CONFLICT (namespace, aggregate) DO NOTHING";
        }

        /** As the keys' purge ({@link PostgresDialect#purgeExpired}). */
        @Override
        String purge() {
            return PostgresDialect.purgeExpired(name);
        }
    }

    /**
     * MariaDB and MySQL: {@code INSERT ... ON DUPLICATE KEY UPDATE}, whose assignments run left to right, so
     * {@code watermark} is decided on the row's {@code expires_at} before that is set anew.
     */
    private static final class MariaDb extends WatermarkTable {

        MariaDb(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  VARBINARY(%d) NOT NULL,
                        aggregate  VARBINARY(%d) NOT NULL,
                        watermark  BIGINT        NOT NULL,
                        expires_at DATETIME(6)   NOT NULL,
                        PRIMARY KEY (namespace, aggregate),
                        INDEX %s_expires_at (expires_at)
                    ) ENGINE = InnoDB""".formatted(name, Dialect.MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES, name));
        }

        @Override
        String raise() {
            String now = dialect.now();
            return "INSERT INTO " + name + " (namespace, aggregate, watermark, expires_at) VALUES (?, ?, ?, "
                    + dialect.plusMicros(now, "?") + ") ON DUPLICATE KEY UPDATE"
                    + " watermark = IF(expires_at <= " + now + ", VALUES(watermark), GREATEST(watermark, VALUES(watermark))),"
                    + " expires_at = VALUES(expires_at)";
        }

        /** A no-op update of an existing row rather than {@code INSERT IGNORE}, which would hide other errors. */
        @Override
        String insertIfAbsent() {
            return "INSERT INTO " + name + " (namespace, aggregate, watermark, expires_at) VALUES (?, ?, 0, "
                    + dialect.now() + ") ON DUPLICATE KEY UPDATE watermark = watermark";
        }

        @Override
        String purge() {
            return "DELETE FROM " + name + " WHERE expires_at < " + dialect.now() + " ORDER BY expires_at LIMIT ?";
        }
    }

    /** H2: {@code MERGE INTO ... USING (VALUES ...)}, each parameter cast, as in {@link H2Dialect}. */
    private static final class H2 extends WatermarkTable {

        private static final String KEY_VALUES = "CAST(? AS VARBINARY(" + Dialect.MAX_NAMESPACE_BYTES
                + ")), CAST(? AS VARBINARY(" + StoreKey.MAX_ID_BYTES + "))";

        H2(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  VARBINARY(%d) NOT NULL,
                        aggregate  VARBINARY(%d) NOT NULL,
                        watermark  BIGINT        NOT NULL,
                        expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
                        PRIMARY KEY (namespace, aggregate)
                    )""".formatted(name, Dialect.MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES),
                    "CREATE INDEX IF NOT EXISTS " + name + "_expires_at ON " + name + " (expires_at)");
        }

        @Override
        String raise() {
            String now = dialect.now();
            String expiresAt = dialect.plusMicros(now, "r.keep_us");
            return "MERGE INTO " + name + " w USING (VALUES (" + KEY_VALUES + ", CAST(? AS BIGINT), CAST(? AS BIGINT)))"
                    + " AS r(namespace, aggregate, watermark, keep_us)"
                    + " ON w.namespace = r.namespace AND w.aggregate = r.aggregate"
                    + " WHEN MATCHED THEN UPDATE SET watermark = CASE WHEN w.expires_at <= " + now
                    + " THEN r.watermark ELSE GREATEST(w.watermark, r.watermark) END, expires_at = " + expiresAt
                    + " WHEN NOT MATCHED THEN INSERT (namespace, aggregate, watermark, expires_at)"
                    + " VALUES (r.namespace, r.aggregate, r.watermark, " + expiresAt + ")";
        }

        @Override
        String insertIfAbsent() {
            return "MERGE INTO " + name + " w USING (VALUES (" + KEY_VALUES + ")) AS r(namespace, aggregate)"
                    + " ON w.namespace = r.namespace AND w.aggregate = r.aggregate"
                    + " WHEN NOT MATCHED THEN INSERT (namespace, aggregate, watermark, expires_at)"
                    + " VALUES (r.namespace, r.aggregate, 0, " + dialect.now() + ")";
        }

        @Override
        String purge() {
            return "DELETE FROM " + name + " WHERE expires_at < " + dialect.now() + " FETCH FIRST ? ROWS ONLY";
        }
    }
}
