package dev.idem.store.jdbc;

import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreKey;
import java.util.List;

/**
 * The table of the replies stored with completions ({@link ReplyStore}) and its SQL, per database. It is named after
 * the keys table, {@code <table>_replies}, lives beside it, and keeps time as the keys table does: on the database's
 * clock, in the same column types. Immutable and thread-safe.
 *
 * <pre>
 * namespace    binary, up to 255 bytes   } primary key: the message's key as the keys table holds it
 * id           binary, up to 512 bytes   }
 * token        the token of the completion the reply was stored with
 * headers      the reply's headers as a JSON object of strings in ASCII ({@link HeaderCodec}), as the outbox's
 * payload      binary, up to 1 MiB: the reply's body
 * expires_at   when the reply is forgotten: its completion's retention after it was stored; indexed for the purge
 * </pre>
 * A row is written only for a key completed with a reply, in the transaction that completes the key, while that
 * transaction holds the key's row: so no two transactions write one key's reply at once, and the keys table's rows,
 * and the completion path of keys completed without a reply, do not change. A reply counts only while the keys row
 * is completed, remembered and holds the reply's {@code token} ({@link #read}): a row left behind by an earlier life
 * of the key (until the purge deletes it) never shows.
 */
abstract class ReplyTable {

    /** What the replies table's name adds to the keys table's. */
    static final String SUFFIX = "_replies";

    /** The columns every dialect's table has, in DDL order; {@code schema: validate} checks them. */
    static final List<String> COLUMNS = List.of("namespace", "id", "token", "headers", "payload", "expires_at");

    /** The primary key's columns. */
    static final List<String> KEY = List.of("namespace", "id");

    final String name;
    final Dialect dialect;

    private ReplyTable(Dialect dialect) {
        this.dialect = dialect;
        this.name = dialect.table + SUFFIX;
    }

    /** The replies table beside the keys table of {@code dialect}. */
    static ReplyTable of(Dialect dialect) {
        if (dialect instanceof PostgresDialect) {
            return new Postgres(dialect);
        }
        if (dialect instanceof MariaDbDialect) {
            return new MariaDb(dialect);
        }
        if (dialect instanceof H2Dialect) {
            return new H2(dialect);
        }
        throw new IllegalArgumentException("No replies table for " + dialect);
    }

    /** Statements that create the table and its index if absent. */
    abstract List<String> createTable();

    /** Deletes a key's reply, before a new one is inserted, or with an operator's delete. Parameters: namespace, id. */
    final String deleteKey() {
        return "DELETE FROM " + name + " WHERE namespace = ? AND id = ?";
    }

    /**
     * Inserts a reply kept for {@code ?} µs from now. Parameters: namespace, id, token, headers, payload, micros.
     */
    final String insert() {
        return "INSERT INTO " + name + " (namespace, id, token, headers, payload, expires_at) VALUES (?, ?, ?, ?, ?, "
                + dialect.plusMicros(dialect.now(), "?") + ")";
    }

    /**
     * Reads the reply of the key's live completion, without locking: headers and payload, one row or none.
     * Parameters: namespace, id.
     */
    final String read() {
        return "SELECT r.headers, r.payload FROM " + dialect.table + " k JOIN " + name + " r ON r.namespace ="
                + " k.namespace AND r.id = k.id AND r.token = k.token WHERE k.namespace = ? AND k.id = ? AND k.state = "
                + Dialect.COMPLETED + " AND k.expires_at > " + dialect.now();
    }

    /**
     * Deletes a namespace's replies forgotten within the given microseconds, with an operator's purge of its completed
     * keys: the reply of every key the purge deletes is among them. Parameters: namespace, micros.
     */
    final String deleteExpiringWithin() {
        return "DELETE FROM " + name + " WHERE namespace = ? AND expires_at < " + dialect.plusMicros(dialect.now(), "?");
    }

    /** Deletes at most the given number of forgotten rows. Parameter: the batch size. */
    abstract String purge();

    @Override
    public String toString() {
        return dialect.product() + " replies table " + name;
    }

    // ------------------------------------------------------------------ per database

    /** PostgreSQL. */
    private static final class Postgres extends ReplyTable {

        Postgres(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  bytea       NOT NULL,
                        id         bytea       NOT NULL,
                        token      bigint      NOT NULL,
                        headers    text        NOT NULL,
                        payload    bytea       NOT NULL,
                        expires_at timestamptz NOT NULL,
                        PRIMARY KEY (namespace, id)
                    )""".formatted(name),
                    "CREATE INDEX IF NOT EXISTS " + name + "_expires_at ON " + name + " (expires_at)");
        }

        /** As the keys' purge ({@link PostgresDialect#purgeExpired}). */
        @Override
        String purge() {
            return PostgresDialect.purgeExpired(name);
        }
    }

    /**
     * MariaDB and MySQL: the payload a {@code MEDIUMBLOB} and the headers a {@code MEDIUMTEXT} (16 MiB each: the ASCII
     * of headers escapes a character in at most six), the rest as the keys table's.
     */
    private static final class MariaDb extends ReplyTable {

        MariaDb(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  VARBINARY(%d) NOT NULL,
                        id         VARBINARY(%d) NOT NULL,
                        token      BIGINT        NOT NULL,
                        headers    MEDIUMTEXT    NOT NULL,
                        payload    MEDIUMBLOB    NOT NULL,
                        expires_at DATETIME(6)   NOT NULL,
                        PRIMARY KEY (namespace, id),
                        INDEX %s_expires_at (expires_at)
                    ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin""".formatted(name,
                    Dialect.MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES, name));
        }

        @Override
        String purge() {
            return "DELETE FROM " + name + " WHERE expires_at < " + dialect.now() + " ORDER BY expires_at LIMIT ?";
        }
    }

    /**
     * H2: the payload a {@code BLOB} and the headers a {@code CLOB}, since its {@code VARBINARY} and {@code VARCHAR}
     * stop at a million bytes or characters.
     */
    private static final class H2 extends ReplyTable {

        H2(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        namespace  VARBINARY(%d) NOT NULL,
                        id         VARBINARY(%d) NOT NULL,
                        token      BIGINT        NOT NULL,
                        headers    CLOB          NOT NULL,
                        payload    BLOB          NOT NULL,
                        expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,
                        PRIMARY KEY (namespace, id)
                    )""".formatted(name, Dialect.MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES),
                    "CREATE INDEX IF NOT EXISTS " + name + "_expires_at ON " + name + " (expires_at)");
        }

        @Override
        String purge() {
            return "DELETE FROM " + name + " WHERE expires_at < " + dialect.now() + " FETCH FIRST ? ROWS ONLY";
        }
    }
}
