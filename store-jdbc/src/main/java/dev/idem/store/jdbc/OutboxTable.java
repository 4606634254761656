package dev.idem.store.jdbc;

import dev.idem.spi.OutboxStore;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;

/**
 * The store's outbox table ({@link OutboxStore}) and its SQL, per database. It is named after the
 * keys table, {@code <table>_outbox}, and lives beside it. Immutable and thread-safe.
 *
 * <pre>
 * id           identity (PostgreSQL, H2) or AUTO_INCREMENT (MariaDB, MySQL), the primary key: rising as rows are
 *              written, so the relay reads the oldest first through the key's index
 * namespace    the emitting pipeline
 * destination  where to publish the message
 * message_id   the message's ID; NULL for none
 * msg_key      the message key; NULL for none
 * headers      the headers as a JSON object of strings in ASCII ({@link HeaderCodec})
 * payload      the body, binary
 * created_at   when the emitting transaction wrote the row, on the database's clock (as the keys table's times)
 * </pre>
 * Text columns hold text as written: UTF-8 on PostgreSQL and H2, {@code utf8mb4} compared byte for byte on
 * MariaDB and MySQL. {@code created_at} has no index of its own: only the backlog reads it, as an aggregate
 * beside a {@code COUNT(*)} that reads the table anyway.
 *
 * <p>The relay takes rows with {@code SELECT ... ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED}: PostgreSQL, H2
 * (the bundled 2.3), MariaDB from 10.6 and MySQL from 8.0 skip the rows another relay holds, so relays in
 * several processes work side by side on different rows. Older MariaDB and MySQL servers lack
 * {@code SKIP LOCKED}; there the relay takes its rows with a plain {@code FOR UPDATE}, which waits for the
 * relay holding the oldest rows to commit and then finds them deleted: relays then run one after another,
 * each row still published by one relay at a time.
 */
abstract class OutboxTable {

    /** What the outbox table's name adds to the keys table's. */
    static final String SUFFIX = "_outbox";

    /** The columns every dialect's table has, in DDL order; {@code schema: validate} checks them. */
    static final List<String> COLUMNS = List.of("id", "namespace", "destination", "message_id", "msg_key", "headers",
            "payload", "created_at");

    /** Rows per JDBC batch of inserts, as per statement for the keys. */
    static final int MAX_ROWS_PER_BATCH = Dialect.MAX_ROWS_PER_STATEMENT;

    final String name;
    private final Dialect dialect;

    private OutboxTable(Dialect dialect) {
        this.dialect = dialect;
        this.name = dialect.table + SUFFIX;
    }

    /** The outbox beside the keys table of {@code dialect}. */
    static OutboxTable of(Dialect dialect) {
        if (dialect instanceof PostgresDialect) {
            return new Postgres(dialect);
        }
        if (dialect instanceof MariaDbDialect) {
            return new MariaDb(dialect);
        }
        if (dialect instanceof H2Dialect) {
            return new H2(dialect);
        }
        throw new IllegalArgumentException("No outbox table for " + dialect);
    }

    /** Statements that create the table if absent. */
    abstract List<String> createTable();

    /**
     * Whether the server skips locked rows ({@code FOR UPDATE SKIP LOCKED}). Here: yes.
     *
     * @throws SQLException when the metadata cannot be read
     */
    boolean skipsLockedRows(DatabaseMetaData server) throws SQLException {
        return true;
    }

    /** Inserts one row, {@code created_at} from the database's clock. Parameters: the six other columns but id. */
    final String insert() {
        return "INSERT INTO " + name + " (namespace, destination, message_id, msg_key, headers, payload, created_at)"
                + " VALUES (?, ?, ?, ?, ?, ?, " + dialect.now() + ")";
    }

    /**
     * Locks and reads the oldest rows, at most as many as the parameter says: id, namespace, destination,
     * message_id, msg_key, headers, payload, and the microseconds since created_at by the database's clock.
     * With {@code skipLocked} it passes over rows other transactions hold; without, it waits for them.
     */
    final String lockOldest(boolean skipLocked) {
        return "SELECT id, namespace, destination, message_id, msg_key, headers, payload, "
                + dialect.microsBetween("created_at", dialect.now()) + " FROM " + name
                + " ORDER BY id LIMIT ? FOR UPDATE" + (skipLocked ? " SKIP LOCKED" : "");
    }

    /**
     * Deletes one row by its id, run as a JDBC batch for a relay's rows. One row per statement, found through the
     * primary key, because a statement for several ({@code id IN (...)}) may be run by InnoDB as a scan whose
     * locks wait for the rows another relay holds, or meet that relay's in a deadlock. Parameter: the id.
     */
    final String delete() {
        return "DELETE FROM " + name + " WHERE id = ?";
    }

    /**
     * Counts the rows, and the microseconds since the oldest {@code created_at} by the database's clock (NULL
     * when there is none).
     */
    final String backlog() {
        return "SELECT COUNT(*), " + dialect.microsBetween("MIN(created_at)", dialect.now()) + " FROM " + name;
    }

    @Override
    public String toString() {
        return dialect.product() + " outbox table " + name;
    }

    private static final class Postgres extends OutboxTable {

        Postgres(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        namespace   text        NOT NULL,
                        destination text        NOT NULL,
                        message_id  text,
                        msg_key     text,
                        headers     text        NOT NULL,
                        payload     bytea       NOT NULL,
                        created_at  timestamptz NOT NULL
                    )""".formatted(name));
        }
    }

    /**
     * Text in {@code utf8mb4} with a binary collation, whatever the server's defaults: every character fits
     * (the older {@code utf8} stops at three bytes) and nothing is folded. {@code created_at} is a
     * {@code DATETIME(6)} in UTC, as in the keys table.
     */
    private static final class MariaDb extends OutboxTable {

        MariaDb(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        id          BIGINT       NOT NULL AUTO_INCREMENT,
                        namespace   VARCHAR(%d) NOT NULL,
                        destination TEXT         NOT NULL,
                        message_id  TEXT,
                        msg_key     TEXT,
                        headers     MEDIUMTEXT   NOT NULL,
                        payload     LONGBLOB     NOT NULL,
                        created_at  DATETIME(6)  NOT NULL,
                        PRIMARY KEY (id)
                    ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin""".formatted(name,
                    Dialect.MAX_NAMESPACE_BYTES));
        }

        /** MariaDB from 10.6, MySQL from 8.0. */
        @Override
        boolean skipsLockedRows(DatabaseMetaData server) throws SQLException {
            boolean mariaDb = server.getDatabaseProductName().toLowerCase(Locale.ROOT).contains("mariadb")
                    || server.getDatabaseProductVersion().toLowerCase(Locale.ROOT).contains("mariadb");
            int major = server.getDatabaseMajorVersion();
            int minor = server.getDatabaseMinorVersion();
            return mariaDb ? major > 10 || major == 10 && minor >= 6 : major >= 8;
        }
    }

    /**
     * The payload is a {@code BLOB} and the headers a {@code CLOB}: H2's {@code VARBINARY} and {@code VARCHAR}
     * stop at a million bytes or characters.
     */
    private static final class H2 extends OutboxTable {

        H2(Dialect dialect) {
            super(dialect);
        }

        @Override
        List<String> createTable() {
            return List.of("""
                    CREATE TABLE IF NOT EXISTS %s (
                        id          BIGINT       GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        namespace   VARCHAR(%d) NOT NULL,
                        destination VARCHAR      NOT NULL,
                        message_id  VARCHAR,
                        msg_key     VARCHAR,
                        headers     CLOB         NOT NULL,
                        payload     BLOB         NOT NULL,
                        created_at  TIMESTAMP(6) WITH TIME ZONE NOT NULL
                    )""".formatted(name, Dialect.MAX_NAMESPACE_BYTES));
        }
    }
}
