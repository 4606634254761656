package dev.idem.store.jdbc;

import dev.idem.spi.StoreKey;
import java.nio.ByteBuffer;
import java.sql.SQLException;
import java.sql.Types;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.Query;

/**
 * H2, the embedded default: {@code MERGE INTO ... USING (VALUES ...)} with a conditional
 * {@code WHEN MATCHED}, then a read of the batch's rows. H2 re-checks the {@code WHEN MATCHED}
 * condition on a row's latest version once it holds the row's lock, so two racing takeovers cannot
 * both succeed. Two racing inserts of a new key make one fail with a duplicate key, which the store
 * runs again. A batch completion is one such {@code MERGE} with no {@code WHEN NOT MATCHED}, read
 * through {@code FINAL TABLE} for the rows it completed.
 */
final class H2Dialect extends UpsertThenReadDialect {

    // Lock timeout, concurrent update, connection broken, database closed.
    private static final Set<Integer> RETRIABLE_CODES = Set.of(50200, 90131, 90067, 90098);

    private final Map<Integer, String> completeAlls = new ConcurrentHashMap<>();

    H2Dialect(String table) {
        super(table);
    }

    @Override
    String product() {
        return "H2";
    }

    @Override
    String driverClassName() {
        return "org.h2.Driver";
    }

    /**
     * The URL H2 gets: a file database opened through H2's {@code async:} file system, and every commit
     * reaching the file before it returns ({@code WRITE_DELAY=0}, unless the URL sets the delay itself).
     *
     * <p>{@code async:}: Idem interrupts threads on purpose (a handler past {@code handler-timeout}, the
     * handlers still running at the end of a stop), and in transactional mode such a thread is inside H2's I/O.
     * H2's default {@code file:} system reads and writes through a {@code FileChannel}, which an interrupt
     * closes ({@code ClosedByInterruptException}), and H2 then closes the whole database under every other
     * session; a reopen may find the file damaged. {@code async:} reads and writes the same file through an
     * {@code AsynchronousFileChannel}, which an interrupt leaves open: the thread keeps its interrupt, and the
     * database goes on. So {@code jdbc:h2:file:} and a bare path ({@code jdbc:h2:./data/idem}) are rewritten
     * to {@code jdbc:h2:async:}; the file and its format are the same, and other processes may open it either
     * way. File systems an interrupt breaks ({@code nio:}, {@code nioMapped:}, ...) are refused by
     * {@link #acceptsFileSystem} before the store starts.
     *
     * <p>{@code WRITE_DELAY=0}: H2 otherwise writes commits in the background up to half a second later, so a
     * process killed in that window loses keys whose messages the broker already saw acknowledged: the
     * messages would be lost, as the end-to-end kill -9 test showed.
     */
    @Override
    String driverUrl(String url) {
        String opened = interruptSafe(url);
        if (opened.toUpperCase(Locale.ROOT).contains(";WRITE_DELAY=")
                || opened.toLowerCase(Locale.ROOT).startsWith(PREFIX + "mem:")) {
            return opened;
        }
        return opened + ";WRITE_DELAY=0";
    }

    private static final String PREFIX = "jdbc:h2:";

    /** H2 URL schemes the store opens as they are: in memory, a server's, and the interrupt-safe file system. */
    private static final Set<String> KEPT_SCHEMES = Set.of("mem", "tcp", "ssl", "async");

    /** What {@link #acceptsFileSystem} accepts, completing "must ...". */
    static final String ACCEPTED_H2_URLS = "name an H2 database an interrupt cannot close: jdbc:h2:file:PATH or "
            + "jdbc:h2:PATH (opened through H2's interrupt-safe async: file system), jdbc:h2:async:PATH, "
            + "jdbc:h2:mem:NAME, or a server's jdbc:h2:tcp:// or jdbc:h2:ssl://; H2's other file systems (nio:, "
            + "nioMapped:, split:, ...) close the database when Idem interrupts a handler inside its I/O";

    /** True for any URL but an H2 one whose file system an interrupt breaks. */
    static boolean acceptsFileSystem(String url) {
        String scheme = h2Scheme(url);
        return scheme == null || scheme.isEmpty() || scheme.equals("file") || KEPT_SCHEMES.contains(scheme);
    }

    /** {@code url} with an H2 file database ({@code file:} or a bare path) opened through {@code async:}. */
    static String interruptSafe(String url) {
        String scheme = h2Scheme(url);
        if (scheme == null || KEPT_SCHEMES.contains(scheme) || !acceptsFileSystem(url)) {
            return url;
        }
        String path = url.substring(PREFIX.length() + (scheme.isEmpty() ? 0 : scheme.length() + 1));
        return PREFIX + "async:" + path;
    }

    /**
     * The scheme right after {@code jdbc:h2:} in lower case, {@code ""} for a bare path (a Windows drive letter
     * is a path), or {@code null} when {@code url} is not an H2 URL.
     */
    private static String h2Scheme(String url) {
        if (!url.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) {
            return null;
        }
        String rest = url.substring(PREFIX.length());
        int colon = rest.indexOf(':');
        int settings = rest.indexOf(';');
        if (colon < 2 || (settings >= 0 && settings < colon)) {
            return "";
        }
        String scheme = rest.substring(0, colon);
        return scheme.chars().allMatch(Character::isLetterOrDigit) ? scheme.toLowerCase(Locale.ROOT) : "";
    }

    @Override
    List<String> createTable() {
        return List.of("""
                CREATE TABLE IF NOT EXISTS %s (
                    namespace   VARBINARY(%d) NOT NULL,
                    id          VARBINARY(%d) NOT NULL,
                    state       SMALLINT      NOT NULL,
                    token       BIGINT        NOT NULL,
                    attempts    INTEGER       NOT NULL,
                    fingerprint VARBINARY,
                    lease_until TIMESTAMP(6) WITH TIME ZONE,
                    expires_at  TIMESTAMP(6) WITH TIME ZONE NOT NULL,
                    starts      INTEGER       DEFAULT 0 NOT NULL,
                    PRIMARY KEY (namespace, id)
                )""".formatted(table, MAX_NAMESPACE_BYTES, StoreKey.MAX_ID_BYTES),
                "CREATE INDEX IF NOT EXISTS " + table + "_expires_at ON " + table + " (expires_at)");
    }

    @Override
    String now() {
        return "CURRENT_TIMESTAMP(6)";
    }

    @Override
    String plusMicros(String timestamp, String micros) {
        return "DATEADD(MICROSECOND, CAST(" + micros + " AS BIGINT), " + timestamp + ")";
    }

    @Override
    String microsBetween(String from, String to) {
        return "DATEDIFF(MICROSECOND, " + from + ", " + to + ")";
    }

    @Override
    String upsert(int rows, boolean transactional) {
        String now = now();
        // Parameters in VALUES carry no type of their own, so each is cast.
        String row = "(CAST(? AS VARBINARY(" + MAX_NAMESPACE_BYTES + ")), CAST(? AS VARBINARY(" + StoreKey.MAX_ID_BYTES
                + ")), CAST(? AS SMALLINT), CAST(? AS BIGINT), CAST(? AS VARBINARY), CAST(? AS BIGINT), CAST(? AS BIGINT))";
        StringBuilder sql = new StringBuilder("MERGE INTO ").append(table).append(" k USING (VALUES ");
        for (int i = 0; i < rows; i++) {
            sql.append(i == 0 ? row : ", " + row);
        }
        String leaseUntil = plusMicros(now, "r.lease_us");
        String expiresAt = plusMicros(now, "r.expires_us");
        return sql.append(") AS r(namespace, id, state, token, fingerprint, lease_us, expires_us)")
                .append(" ON k.namespace = r.namespace AND k.id = r.id")
                .append(" WHEN MATCHED AND (").append(transactional ? transactionTakeover("k.") : claimTakeover("k."))
                .append(") THEN UPDATE SET attempts = CASE WHEN k.expires_at <= ").append(now)
                .append(" THEN 1 ELSE k.attempts + 1 END, ").append(startsOnTakeover("k."))
                .append(", state = r.state, token = r.token, fingerprint = r.fingerprint,")
                .append(" lease_until = ").append(leaseUntil).append(", expires_at = ").append(expiresAt)
                .append(" WHEN NOT MATCHED THEN INSERT (namespace, id, state, token, attempts, fingerprint, lease_until,")
                .append(" expires_at, starts) VALUES (r.namespace, r.id, r.state, r.token, 1, r.fingerprint, ")
                .append(leaseUntil).append(", ").append(expiresAt).append(", 0)")
                .toString();
    }

    /**
     * One statement: the merge completes the rows whose token owns a live claim and returns them, and only
     * when it left some alone does one read follow ({@link #alreadyCompleted}). The rows are listed in a
     * statement of a power-of-two size, the rest filled with NULLs that match no row, so that few statement
     * texts reach the caches.
     */
    @Override
    boolean[] completeAll(Handle handle, List<ClaimRow> rows) {
        int n = rows.size();
        int size = n == 1 ? 1 : Integer.highestOneBit(n - 1) << 1;
        Query merge = handle.createQuery(completeAlls.computeIfAbsent(size, this::completeAll));
        int position = 0;
        for (ClaimRow row : rows) {
            merge.bind(position++, row.namespace()).bind(position++, row.id()).bind(position++, row.token())
                    .bind(position++, row.expiresMicros());
        }
        for (int i = n; i < size; i++) {
            merge.bindNull(position++, Types.VARBINARY).bindNull(position++, Types.VARBINARY)
                    .bindNull(position++, Types.BIGINT).bindNull(position++, Types.BIGINT);
        }
        Set<ByteBuffer> completed = new HashSet<>();
        merge.map((rs, ctx) -> rowKey(rs.getBytes(1), rs.getBytes(2), rs.getLong(3))).forEach(completed::add);
        boolean[] done = new boolean[n];
        for (int i = 0; i < n; i++) {
            ClaimRow row = rows.get(i);
            done[i] = completed.contains(rowKey(row.namespace(), row.id(), row.token()));
        }
        return alreadyCompleted(handle, rows, done);
    }

    private String completeAll(int rows) {
        String now = now();
        String row = "(CAST(? AS VARBINARY(" + MAX_NAMESPACE_BYTES + ")), CAST(? AS VARBINARY(" + StoreKey.MAX_ID_BYTES
                + ")), CAST(? AS BIGINT), CAST(? AS BIGINT))";
        StringBuilder sql = new StringBuilder("SELECT namespace, id, token FROM FINAL TABLE (MERGE INTO ")
                .append(table).append(" k USING (VALUES ");
        for (int i = 0; i < rows; i++) {
            sql.append(i == 0 ? row : ", " + row);
        }
        return sql.append(") AS r(namespace, id, token, retention_us)")
                .append(" ON k.namespace = r.namespace AND k.id = r.id AND k.token = r.token")
                .append(" WHEN MATCHED AND k.state = ").append(CLAIMED).append(" AND k.expires_at > ").append(now)
                .append(" THEN UPDATE SET state = ").append(COMPLETED).append(", lease_until = NULL, expires_at = ")
                .append(plusMicros(now, "r.retention_us")).append(')')
                .toString();
    }

    /** The update's own result (a data change delta table) gives the count: one statement, no transaction. */
    @Override
    int recordStart(Handle handle, byte[] namespace, byte[] id, long token) {
        return handle.createQuery("SELECT starts FROM FINAL TABLE (" + countStart() + ")")
                .bind(0, namespace).bind(1, id).bind(2, token)
                .mapTo(Integer.class)
                .findOne()
                .orElse(0);
    }

    @Override
    String purge() {
        return "DELETE FROM " + table + " WHERE expires_at < " + now() + " FETCH FIRST ? ROWS ONLY";
    }

    @Override
    String purgeCompleted() {
        return "DELETE FROM " + table + " WHERE " + completedWithin() + " FETCH FIRST ? ROWS ONLY";
    }

    @Override
    boolean isConflict(SQLException e) {
        return super.isConflict(e) || e.getErrorCode() == 90131;
    }

    @Override
    boolean isRetriableVendorCode(int errorCode) {
        return RETRIABLE_CODES.contains(errorCode);
    }
}
