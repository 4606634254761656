package dev.idem.store.jdbc;

import dev.idem.spi.StoreKey;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.Query;

/**
 * MariaDB (and MySQL through the MariaDB driver): {@code INSERT ... ON DUPLICATE KEY UPDATE} with
 * conditional assignments. From MariaDB 10.5 the same statement's {@code RETURNING} answers for every
 * row, inserted, taken over or left alone (with its values after the statement), so a batch claim is
 * one statement; MySQL, which lacks {@code RETURNING}, gets a read of the batch's rows after the upsert.
 * Keys are {@code VARBINARY}, compared byte for byte whatever the server's collation; times are
 * {@code DATETIME(6)} in UTC, so neither the session time zone nor 2038 matters.
 */
final class MariaDbDialect extends UpsertThenReadDialect {

    // Deadlock, lock wait timeout, connection killed, too many connections, server shutting down,
    // server gone away, connection lost during a query.
    private static final Set<Integer> RETRIABLE_CODES = Set.of(1213, 1205, 1927, 1040, 1053, 2006, 2013);

    private final boolean returning;
    private final Map<Integer, String> returningClaims = new ConcurrentHashMap<>();

    MariaDbDialect(String table) {
        this(table, false);
    }

    private MariaDbDialect(String table, boolean returning) {
        super(table);
        this.returning = returning;
    }

    /** MariaDB from 10.5 returns every row of an upsert; MySQL and older MariaDB do not. */
    @Override
    Dialect forServer(DatabaseMetaData server) throws SQLException {
        boolean mariaDb = server.getDatabaseProductName().toLowerCase(Locale.ROOT).contains("mariadb")
                || server.getDatabaseProductVersion().toLowerCase(Locale.ROOT).contains("mariadb");
        int major = server.getDatabaseMajorVersion();
        int minor = server.getDatabaseMinorVersion();
        return mariaDb && (major > 10 || major == 10 && minor >= 5) ? new MariaDbDialect(table, true) : this;
    }

    @Override
    List<StoredRow> claimExactly(Handle handle, List<ClaimRow> rows) {
        if (!returning) {
            return super.claimExactly(handle, rows);
        }
        String sql = returningClaims.computeIfAbsent(rows.size(),
                size -> claimUpsert(size) + " RETURNING " + storedColumns() + ", namespace, id");
        Query query = handle.createQuery(sql);
        int position = 0;
        for (ClaimRow row : rows) {
            position = bindRow(query, position, row);
        }
        return inRequestOrder(rows, query);
    }

    @Override
    String product() {
        return returning ? "MariaDB" : "MariaDB/MySQL";
    }

    @Override
    String driverClassName() {
        return "org.mariadb.jdbc.Driver";
    }

    /** The MariaDB driver counts in milliseconds; its connectTimeout also bounds the handshake. */
    @Override
    Map<String, String> driverTimeouts(Duration connect, Duration socket) {
        return Map.of("connectTimeout", Long.toString(connect.toMillis()), "socketTimeout",
                Long.toString(socket.toMillis()));
    }

    /** The MariaDB driver takes a {@code jdbc:mysql:} URL only when the URL itself permits it. */
    @Override
    String driverUrl(String url) {
        if (!url.toLowerCase(Locale.ROOT).startsWith("jdbc:mysql:") || url.contains("permitMysqlScheme")) {
            return url;
        }
        return url + (url.indexOf('?') < 0 ? "?" : "&") + "permitMysqlScheme";
    }

    @Override
    List<String> createTable() {
        return List.of("""
                CREATE TABLE IF NOT EXISTS %s (
                    namespace   VARBINARY(%d) NOT NULL,
                    id          VARBINARY(%d) NOT NULL,
                    state       TINYINT       NOT NULL,
                    token       BIGINT        NOT NULL,
                    attempts    INT           NOT NULL,
                    fingerprint BLOB,
                    lease_until DATETIME(6),
                    expires_at  DATETIME(6)   NOT NULL,
                    starts      INT           DEFAULT 0 NOT NULL,
                    PRIMARY KEY (namespace, id),
                    INDEX %s_expires_at (expires_at)
                ) ENGINE = InnoDB""".formatted(table, MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES, table));
    }

    @Override
    String now() {
        return "UTC_TIMESTAMP(6)";
    }

    @Override
    String plusMicros(String timestamp, String micros) {
        return "(" + timestamp + " + INTERVAL (" + micros + ") MICROSECOND)";
    }

    @Override
    String microsBetween(String from, String to) {
        return "TIMESTAMPDIFF(MICROSECOND, " + from + ", " + to + ")";
    }

    /**
     * MariaDB evaluates the assignments left to right, each seeing the ones before. So attempts, starts
     * and token are decided first, on the row as it was; every later column follows the token, which is
     * the request's own (unique) token exactly when the row was taken over. A row whose {@code expires_at}
     * has passed is always taken over, so starts need not look at the token.
     */
    @Override
    String upsert(int rows, boolean transactional) {
        String now = now();
        String takeover = transactional ? transactionTakeover("") : claimTakeover("");
        String row = "(?, ?, ?, ?, 1, ?, " + plusMicros(now, "?") + ", " + plusMicros(now, "?") + ", 0)";
        StringBuilder sql = new StringBuilder("INSERT INTO ").append(table)
                .append(" (namespace, id, state, token, attempts, fingerprint, lease_until, expires_at, starts) VALUES ");
        for (int i = 0; i < rows; i++) {
            sql.append(i == 0 ? row : ", " + row);
        }
        String ours = "token = VALUES(token)";
        return sql.append(" ON DUPLICATE KEY UPDATE")
                .append(" attempts = IF(expires_at <= ").append(now).append(", 1, IF(").append(takeover)
                .append(", attempts + 1, attempts)),")
                .append(" ").append(startsOnTakeover("")).append(",")
                .append(" token = IF(").append(takeover).append(", VALUES(token), token),")
                .append(" state = IF(").append(ours).append(", VALUES(state), state),")
                .append(" fingerprint = IF(").append(ours).append(", VALUES(fingerprint), fingerprint),")
                .append(" lease_until = IF(").append(ours).append(", VALUES(lease_until), lease_until),")
                .append(" expires_at = IF(").append(ours).append(", VALUES(expires_at), expires_at)")
                .toString();
    }

    @Override
    String purge() {
        return "DELETE FROM " + table + " WHERE expires_at < " + now() + " ORDER BY expires_at LIMIT ?";
    }

    /** A single-table {@code DELETE} takes {@code ORDER BY} and {@code LIMIT}; the order keeps it deterministic for replication. */
    @Override
    String purgeCompleted() {
        return "DELETE FROM " + table + " WHERE " + completedWithin() + " ORDER BY id LIMIT ?";
    }

    @Override
    boolean isConflict(SQLException e) {
        return super.isConflict(e) || e.getErrorCode() == 1213 || e.getErrorCode() == 1062;
    }

    @Override
    boolean isRetriableVendorCode(int errorCode) {
        return RETRIABLE_CODES.contains(errorCode);
    }
}
