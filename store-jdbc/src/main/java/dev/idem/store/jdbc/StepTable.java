package dev.idem.store.jdbc;

import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import java.util.List;

/**
 * The table of the durable steps ({@link StepStore}) and its SQL, per database. It is named after the keys table,
 * {@code <table>_steps}, lives beside it, and keeps time as the keys table does: on the database's clock, in the same
 * column types. Immutable and thread-safe.
 *
 * <pre>
 * namespace    binary, up to 255 bytes   } primary key: the message's key as the keys table holds it,
 * id           binary, up to 512 bytes   } and the step's name as UTF-8 bytes, each compared exactly
 * name         binary, up to 255 bytes   }
 * step_value   binary, up to 1 MiB: the step's result ({@code value} is a reserved word of H2)
 * expires_at   when the step is forgotten; indexed for the purge
 * </pre>
 * A row whose {@code expires_at} has passed counts as absent before the purge deletes it. A step is kept for its
 * claim's retention (the keys row's {@code expires_at} minus its {@code lease_until}) after the earlier of its record
 * and the claim's lease end ({@link #expiresAt}): never past the moment its key could be claimed afresh, whether the
 * key completes (its row is then kept for the retention from the completion, which comes after the record) or its
 * claim is abandoned (forgotten at the lease end plus the retention).
 */
abstract class StepTable {

    /** What the steps table's name adds to the keys table's. */
    static final String SUFFIX = "_steps";

    /** The columns every dialect's table has, in DDL order; {@code schema: validate} checks them. */
    static final List<String> COLUMNS = List.of("namespace", "id", "name", "step_value", "expires_at");

    /** The primary key's columns. */
    static final List<String> KEY = List.of("namespace", "id", "name");

    final String name;
    final Dialect dialect;

    private StepTable(Dialect dialect) {
        this.dialect = dialect;
        this.name = dialect.table + SUFFIX;
    }

    /** The steps table beside the keys table of {@code dialect}. */
    static StepTable of(Dialect dialect) {
        if (dialect instanceof PostgresDialect) {
            return new Postgres(dialect);
        }
        if (dialect instanceof MariaDbDialect) {
            return new MariaDb(dialect);
        }
        if (dialect instanceof H2Dialect) {
            return new H2(dialect);
        }
        throw new IllegalArgumentException("No steps table for " + dialect);
    }

    /** Statements that create the table and its index if absent. */
    abstract List<String> createTable();

    /**
     * When a step recorded now under the keys row {@code k} is forgotten: the claim's retention after the earlier of
     * now and its lease end, which is the row's own {@code expires_at} once the lease has ended.
     */
    final String expiresAt() {
        String now = dialect.now();
        return "CASE WHEN k.lease_until > " + now + " THEN "
                + dialect.plusMicros(now, dialect.microsBetween("k.lease_until", "k.expires_at"))
                + " ELSE k.expires_at END";
    }

    /**
     * Reads the key's claim without locking it, and what {@link #expiresAt} would give, in microseconds from now:
     * token, state, whether the row is remembered, microseconds. Parameters: namespace, id.
     */
    final String readClaim() {
        String now = dialect.now();
        return "SELECT k.token, k.state, k.expires_at > " + now + ", " + dialect.microsBetween(now, expiresAt())
                + " FROM " + dialect.table + " k WHERE k.namespace = ? AND k.id = ?";
    }

    /** {@link #readClaim()}, locking the row until the transaction ends. Parameters: namespace, id. */
    final String lockClaim() {
        return readClaim() + " FOR UPDATE";
    }

    /**
     * Replaces a step's value, its {@code expires_at} set anew from the keys row, which the caller has locked.
     * Parameters: value, namespace, id (of the keys row), namespace, id, name.
     */
    final String updateFromClaim() {
        return "UPDATE " + name + " SET step_value = ?, expires_at = (SELECT " + expiresAt() + " FROM " + dialect.table
                + " k WHERE k.namespace = ? AND k.id = ?) WHERE namespace = ? AND id = ? AND name = ?";
    }

    /**
     * Inserts a step, its {@code expires_at} from the keys row, which the caller has locked. Parameters: namespace,
     * id, name, value, namespace, id (of the keys row).
     */
    final String insertFromClaim() {
        return "INSERT INTO " + name + " (namespace, id, name, step_value, expires_at) SELECT ?, ?, ?, ?, " + expiresAt()
                + " FROM " + dialect.table + " k WHERE k.namespace = ? AND k.id = ?";
    }

    /** Replaces a step's value, kept for {@code ?} µs from now. Parameters: value, micros, namespace, id, name. */
    final String update() {
        return "UPDATE " + name + " SET step_value = ?, expires_at = " + dialect.plusMicros(dialect.now(), "?")
                + " WHERE namespace = ? AND id = ? AND name = ?";
    }

    /** Inserts a step kept for {@code ?} µs from now. Parameters: namespace, id, name, value, micros. */
    final String insert() {
        return "INSERT INTO " + name + " (namespace, id, name, step_value, expires_at) VALUES (?, ?, ?, ?, "
                + dialect.plusMicros(dialect.now(), "?") + ")";
    }

    /**
     * Reads the key's live steps if the token owns its claim, without locking: one row with a {@code NULL} name when
     * it owns the claim and holds no step, no row when it does not own it. Parameters: namespace, id, token.
     */
    final String read() {
        String now = dialect.now();
        return "SELECT s.name, s.step_value FROM " + dialect.table + " k LEFT JOIN " + name + " s ON s.namespace ="
                + " k.namespace AND s.id = k.id AND s.expires_at > " + now + " WHERE k.namespace = ? AND k.id = ?"
                + " AND k.token = ? AND k.state = " + Dialect.CLAIMED + " AND k.expires_at > " + now;
    }

    /** Deletes a key's steps. Parameters: namespace, id. */
    final String deleteKey() {
        return "DELETE FROM " + name + " WHERE namespace = ? AND id = ?";
    }

    /**
     * Deletes a namespace's steps forgotten within the given microseconds, with an operator's purge of its completed
     * keys: every step of a key the purge deletes is among them. Parameters: namespace, micros.
     */
    final String deleteExpiringWithin() {
        return "DELETE FROM " + name + " WHERE namespace = ? AND expires_at < " + dialect.plusMicros(dialect.now(), "?");
    }

    /** Deletes at most the given number of forgotten rows. Parameter: the batch size. */
    abstract String purge();

    // ------------------------------------------------------------------ per database

    /** PostgreSQL. */
    private static final class Postgres extends StepTable {

        Postgres(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  bytea       NOT NULL,
                        id         bytea       NOT NULL,
                        name       bytea       NOT NULL,
                        step_value bytea       NOT NULL,
                        expires_at timestamptz NOT NULL,
                        PRIMARY KEY (namespace, id, name)
                    )""".formatted(name),
                    "CREATE INDEX IF NOT EXISTS " + name + "_expires_at ON " + name + " (expires_at)");
        }

        /** As the keys' purge ({@link PostgresDialect#purgeExpired}). */
        @Override
        String purge() {
            return PostgresDialect.purgeExpired(name);
        }
    }

    /** MariaDB and MySQL: the value a {@code MEDIUMBLOB} (16 MiB), the rest as the keys table's. */
    private static final class MariaDb extends StepTable {

        MariaDb(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  VARBINARY(%d) NOT NULL,
                        id         VARBINARY(%d) NOT NULL,
                        name       VARBINARY(%d) NOT NULL,
                        step_value MEDIUMBLOB    NOT NULL,
                        expires_at DATETIME(6)   NOT NULL,
                        PRIMARY KEY (namespace, id, name),
                        INDEX %s_expires_at (expires_at)
                    ) ENGINE = InnoDB""".formatted(name, Dialect.MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES,
                    StepStore.MAX_NAME_BYTES, name));
        }

        @Override
        String purge() {
            return "DELETE FROM " + name + " WHERE expires_at < " + dialect.now() + " ORDER BY expires_at LIMIT ?";
        }
    }

    /** H2: the value a {@code BLOB}, since its {@code VARBINARY} stops at a million bytes. */
    private static final class H2 extends StepTable {

        H2(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  VARBINARY(%d) NOT NULL,
                        id         VARBINARY(%d) NOT NULL,
                        name       VARBINARY(%d) NOT NULL,
                        step_value BLOB          NOT NULL,
                        expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
                        PRIMARY KEY (namespace, id, name)
                    )""".formatted(name, Dialect.MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES,
                    StepStore.MAX_NAME_BYTES),
                    "CREATE INDEX IF NOT EXISTS " + name + "_expires_at ON " + name + " (expires_at)");
        }

        @Override
        String purge() {
            return "DELETE FROM " + name + " WHERE expires_at < " + dialect.now() + " FETCH FIRST ? ROWS ONLY";
        }
    }
}
