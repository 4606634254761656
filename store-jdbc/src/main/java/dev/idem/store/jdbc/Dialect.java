package dev.idem.store.jdbc;

import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import java.nio.ByteBuffer;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;
import org.jdbi.v3.core.statement.Query;

/**
 * What differs between databases: the driver, the table's DDL, the time arithmetic on the database's
 * clock, and the batched upsert behind a claim. One subclass per database; each instance is bound to
 * one table and holds that table's SQL. Immutable and thread-safe.
 *
 * <p>The table, one row per claimed or completed key:
 * <pre>
 * namespace    binary, up to 255 bytes   } primary key; UTF-8 bytes, so comparison is exact:
 * id           binary, up to 512 bytes   } no collation, case folding, trailing-space rule or NUL limit
 * state        1 = claimed, 2 = completed
 * token        the owner's fencing token
 * attempts     claims without completion
 * fingerprint  binary, the payload fingerprint as UTF-8; NULL when the pipeline does not fingerprint
 * lease_until  when the claim's lease ends; NULL once completed
 * expires_at   when the row is forgotten (lease end + claim retention, or completion + retention); indexed
 * starts       handler starts recorded since the key was first claimed (recordStart): 0 on insert, kept
 *              by a takeover of a remembered row, 0 again when a forgotten row is taken over
 * </pre>
 * A row whose {@code expires_at} has passed counts as absent even before the purge deletes it.
 */
abstract class Dialect {

    static final int CLAIMED = 1;
    static final int COMPLETED = 2;

    /** The longest namespace, in UTF-8 bytes, the table holds: what the runtime may hand a store. */
    static final int MAX_NAMESPACE_BYTES = StoreKey.MAX_NAMESPACE_BYTES;

    /** The columns every dialect's table has, in DDL order; {@code schema: validate} checks them. */
    static final List<String> COLUMNS = List.of("namespace", "id", "state", "token", "attempts", "fingerprint",
            "lease_until", "expires_at", "starts");

    /**
     * The columns added after tables were first made, with their definitions: a table made before lacks
     * them, and {@code schema: create} adds them. Each has a constant default, so adding it rewrites no
     * row on the supported versions (PostgreSQL 11, MariaDB 10.3, MySQL 8.0.12, H2) and rows written
     * before read as that default.
     */
    static final Map<String, String> ADDED_COLUMNS = Map.of("starts", "INTEGER DEFAULT 0 NOT NULL");

    /** Rows per claim statement: bounds the statement's size, its parameter count and the locks it holds. */
    static final int MAX_ROWS_PER_STATEMENT = 1000;

    final String table;

    /** {@link #completedByAny} per number of keys. */
    private final Map<Integer, String> completedByAnyStatements = new ConcurrentHashMap<>();
    private final Map<Integer, String> lockRowsStatements = new ConcurrentHashMap<>();

    Dialect(String table) {
        this.table = table;
    }

    /**
     * The dialect for a JDBC URL.
     *
     * @throws IllegalArgumentException naming the accepted prefixes, for any other URL
     */
    static Dialect forUrl(String url, String table) {
        String lower = url.toLowerCase(Locale.ROOT);
        if (lower.startsWith("jdbc:postgresql:")) {
            return new PostgresDialect(table);
        }
        if (lower.startsWith("jdbc:mariadb:") || lower.startsWith("jdbc:mysql:")) {
            return new MariaDbDialect(table);
        }
        if (lower.startsWith("jdbc:h2:")) {
            return new H2Dialect(table);
        }
        throw new IllegalArgumentException("must " + SUPPORTED_URLS);
    }

    static final String SUPPORTED_URLS =
            "be a JDBC URL starting with jdbc:postgresql:, jdbc:mariadb:, jdbc:mysql: or jdbc:h2:";

    static boolean supports(String url) {
        try {
            forUrl(url, "t");
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * This dialect tuned to the server it connected to, from its metadata: a dialect whose SQL depends
     * on the server's version returns another instance; the rest return themselves.
     */
    Dialect forServer(DatabaseMetaData server) throws SQLException {
        return this;
    }

    /** The database's name, for messages. */
    abstract String product();

    /** The driver class, named so that the pool loads it from the plugin's own class loader. */
    abstract String driverClassName();

    /** The URL handed to the driver; a dialect may add what its driver needs. */
    String driverUrl(String url) {
        return url;
    }

    /**
     * The driver's own timeouts, as its properties, that bound connecting and logging in ({@code connect}) and
     * waiting for any answer of the server ({@code socket}, zero for none); none for an embedded database.
     */
    Map<String, String> driverTimeouts(Duration connect, Duration socket) {
        return Map.of();
    }

    /** Whole seconds, rounded up, as drivers that count in seconds take them. */
    static String seconds(Duration d) {
        return Long.toString((d.toMillis() + 999) / 1000);
    }

    /** Statements that create the table and its index if absent. */
    abstract List<String> createTable();

    /** The statement that adds one of the {@link #ADDED_COLUMNS} to a table made before it. */
    final String addColumn(String column) {
        String definition = ADDED_COLUMNS.get(column);
        if (definition == null) {
            throw new IllegalArgumentException("not an added column: " + column);
        }
        return "ALTER TABLE " + table + " ADD COLUMN " + column + " " + definition;
    }

    // ------------------------------------------------------------------ time, on the database's clock

    /** The database's current time; constant within one statement. */
    abstract String now();

    /** {@code timestamp} plus {@code micros} microseconds; NULL when {@code micros} is NULL. */
    abstract String plusMicros(String timestamp, String micros);

    /** Microseconds from {@code from} to {@code to}, as an integer. */
    abstract String microsBetween(String from, String to);

    // ------------------------------------------------------------------ claims

    /**
     * Inserts each row, or takes over an existing row that a claim may take over (expired, or claimed
     * with its lease ended), then reads every row back.
     *
     * @param rows at most {@link #MAX_ROWS_PER_STATEMENT}, distinct keys, sorted by key so that
     *        concurrent batches lock rows in one order and cannot deadlock on each other
     * @return the stored row per request, in request order; {@code null} where the key has no row
     */
    abstract List<StoredRow> claim(Handle handle, List<ClaimRow> rows);

    /**
     * For transactional mode, inside the caller's transaction: inserts the row, or takes over an
     * existing one that is expired or merely claimed, leaving a live completed row alone. A
     * concurrent transaction holding the same key makes this wait until it ends.
     */
    abstract void upsertInTransaction(Handle handle, ClaimRow row);

    /**
     * The {@code SET} clause's assignment of {@code starts} when the row {@code alias} names is taken over:
     * kept from a row still remembered, 0 for a forgotten one, as {@code attempts} starts again at 1.
     */
    final String startsOnTakeover(String alias) {
        return "starts = CASE WHEN " + alias + "expires_at <= " + now() + " THEN 0 ELSE " + alias + "starts END";
    }

    /** Whether an existing row may be taken over by a claim: forgotten, or its lease ended. */
    final String claimTakeover(String alias) {
        String now = now();
        return alias + "expires_at <= " + now + " OR (" + alias + "state = " + CLAIMED + " AND " + alias
                + "lease_until <= " + now + ")";
    }

    /** Whether an existing row may be taken over by a transaction: anything but a live completed key. */
    final String transactionTakeover(String alias) {
        return alias + "expires_at <= " + now() + " OR " + alias + "state = " + CLAIMED;
    }

    // ------------------------------------------------------------------ shared statements

    /** The columns a {@link StoredRow} is read from, in {@link StoredRow#read} order. */
    final String storedColumns() {
        return "token, attempts, state, fingerprint, " + microsBetween(now(), "lease_until") + ", expires_at > " + now();
    }

    /** Locks and reads one key's row within a transaction. Parameters: namespace, id. */
    String lockRow() {
        return "SELECT " + storedColumns() + " FROM " + table + " WHERE namespace = ? AND id = ? FOR UPDATE";
    }

    /**
     * Locks and reads the rows of {@code rows}' keys within a transaction: the stored columns, then namespace and id.
     * Keys without a row are simply missing from the answer. The keys are listed in the statement, as (namespace, id)
     * pairs; a statement text per size.
     *
     * @param rows at most {@link #MAX_ROWS_PER_STATEMENT}, distinct keys, sorted by key: the caller takes every
     *        transaction's locks in one order
     */
    Query lockRows(Handle handle, List<ClaimRow> rows) {
        String sql = lockRowsStatements.computeIfAbsent(rows.size(), n -> {
            StringBuilder text = new StringBuilder("SELECT ").append(storedColumns()).append(", namespace, id FROM ")
                    .append(table).append(" WHERE (namespace, id) IN (");
            for (int i = 0; i < n; i++) {
                text.append(i == 0 ? "(?, ?)" : ", (?, ?)");
            }
            return text.append(") FOR UPDATE").toString();
        });
        Query read = handle.createQuery(sql);
        int position = 0;
        for (ClaimRow row : rows) {
            read.bind(position++, row.namespace()).bind(position++, row.id());
        }
        return read;
    }

    /**
     * For transactional mode, inside the caller's transaction, on a row the caller has locked and may take over
     * ({@link #transactionTakeover}): writes it completed with a new token, exactly as
     * {@link #upsertInTransaction} takes such a row over. Parameters: token, fingerprint, retention micros,
     * namespace, id. The assignments read {@code expires_at} before the last one changes it (MariaDB assigns
     * left to right).
     */
    final String completeLocked() {
        String now = now();
        return "UPDATE " + table + " SET attempts = CASE WHEN expires_at <= " + now + " THEN 1 ELSE attempts + 1 END, "
                + startsOnTakeover("") + ", state = " + COMPLETED + ", token = ?, fingerprint = ?, lease_until = NULL,"
                + " expires_at = " + plusMicros(now, "?") + " WHERE namespace = ? AND id = ?";
    }

    /** Completes a live claim of the token's owner. Parameters: retention micros, namespace, id, token. */
    String complete() {
        return "UPDATE " + table + " SET state = " + COMPLETED + ", lease_until = NULL, expires_at = "
                + plusMicros(now(), "?") + " WHERE namespace = ? AND id = ? AND token = ? AND state = " + CLAIMED
                + " AND expires_at > " + now();
    }

    /** Counts the key if that token completed it and it is remembered. Parameters: namespace, id, token. */
    String completedBy() {
        return "SELECT COUNT(*) FROM " + table + " WHERE namespace = ? AND id = ? AND token = ? AND state = "
                + COMPLETED + " AND expires_at > " + now();
    }

    /**
     * Completes one key as {@code complete} answers it: the {@link #complete()} update, and when it changed no
     * row, whether that token already completed the key ({@link #completedBy()}), so a retry after a timeout
     * whose write did land is not mistaken for a lost lease.
     */
    final boolean completeOne(Handle handle, byte[] namespace, byte[] id, long token, long retentionMicros) {
        int updated = handle.createUpdate(complete())
                .bind(0, retentionMicros).bind(1, namespace).bind(2, id).bind(3, token)
                .execute();
        return updated > 0 || handle.createQuery(completedBy())
                .bind(0, namespace).bind(1, id).bind(2, token)
                .mapTo(Integer.class).one() > 0;
    }

    /**
     * Completes each of {@code rows} (a key, its owner's token, and its retention as
     * {@link ClaimRow#expiresMicros()}) exactly as {@link #completeOne} would, and answers per row whether the
     * key is now completed with that row's token.
     *
     * <p>Here: {@link #complete()} for every row as one JDBC batch, which drivers send in one round trip
     * (MariaDB's pipelines it), inside one transaction, so that the batch costs one commit and not one per
     * row; the update count of each row tells whether it completed the key, and one read
     * ({@link #alreadyCompleted}) then finds the keys its token had completed before. A driver that does not
     * count each row (MariaDB's bulk mode, {@code useBulkStmts}, for statements prepared without generated keys;
     * Jdbi prepares them with) leaves no way to tell which rows it completed: the transaction is then rolled
     * back and the rows are completed one by one.
     *
     * @param rows at most {@link #MAX_ROWS_PER_STATEMENT}; distinct pairs of key and token, sorted by key so
     *        that concurrent batches lock rows in one order
     */
    boolean[] completeAll(Handle handle, List<ClaimRow> rows) {
        int[] counts;
        handle.begin();
        try {
            PreparedBatch batch = handle.prepareBatch(complete());
            for (ClaimRow row : rows) {
                batch.bind(0, row.expiresMicros()).bind(1, row.namespace()).bind(2, row.id()).bind(3, row.token())
                        .add();
            }
            counts = batch.execute();
            if (countsEachRow(counts, rows.size())) {
                handle.commit();
            } else {
                handle.rollback();
                counts = null;
            }
        } catch (RuntimeException e) {
            try {
                handle.rollback();
            } catch (RuntimeException rollback) {
                e.addSuppressed(rollback);
            }
            throw e;
        }
        boolean[] done = new boolean[rows.size()];
        for (int i = 0; i < done.length; i++) {
            ClaimRow row = rows.get(i);
            done[i] = counts != null ? counts[i] > 0
                    : completeOne(handle, row.namespace(), row.id(), row.token(), row.expiresMicros());
        }
        return counts != null ? alreadyCompleted(handle, rows, done) : done;
    }

    private static boolean countsEachRow(int[] counts, int rows) {
        if (counts.length != rows) {
            return false;
        }
        for (int count : counts) {
            if (count < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Marks each row not {@code done} whose key is completed with the row's token and still remembered: a
     * completion retried after one that landed. One read of those keys ({@link #completedByAny}).
     */
    final boolean[] alreadyCompleted(Handle handle, List<ClaimRow> rows, boolean[] done) {
        List<ClaimRow> rest = new ArrayList<>();
        for (int i = 0; i < done.length; i++) {
            if (!done[i]) {
                rest.add(rows.get(i));
            }
        }
        if (rest.isEmpty()) {
            return done;
        }
        Query read = completedByAny(handle, rest);
        Set<ByteBuffer> completed = new HashSet<>();
        read.map((rs, ctx) -> rowKey(rs.getBytes(1), rs.getBytes(2), rs.getLong(3))).forEach(completed::add);
        for (int i = 0; i < done.length; i++) {
            ClaimRow row = rows.get(i);
            done[i] = done[i] || completed.contains(rowKey(row.namespace(), row.id(), row.token()));
        }
        return done;
    }

    /**
     * Reads namespace, id and token of those of {@code rows}' keys completed and remembered. The keys are listed in a
     * statement of a power-of-two number of keys (the last repeated), so that few statement texts reach the caches.
     */
    Query completedByAny(Handle handle, List<ClaimRow> rows) {
        int size = rows.size() == 1 ? 1 : Integer.highestOneBit(rows.size() - 1) << 1;
        Query read = handle.createQuery(completedByAnyStatements.computeIfAbsent(size, keys -> {
            StringBuilder sql = new StringBuilder("SELECT namespace, id, token FROM ").append(table)
                    .append(" WHERE state = ").append(COMPLETED).append(" AND expires_at > ").append(now())
                    .append(" AND (namespace, id) IN (");
            for (int i = 0; i < keys; i++) {
                sql.append(i == 0 ? "(?, ?)" : ", (?, ?)");
            }
            return sql.append(')').toString();
        }));
        int position = 0;
        for (int j = 0; j < size; j++) {
            ClaimRow row = rows.get(Math.min(j, rows.size() - 1));
            read.bind(position++, row.namespace()).bind(position++, row.id());
        }
        return read;
    }

    /** A set key for namespace, id and token that cannot confuse one split of the bytes for another. */
    static ByteBuffer rowKey(byte[] namespace, byte[] id, long token) {
        return ByteBuffer.allocate(12 + namespace.length + id.length).putInt(namespace.length).put(namespace).put(id)
                .putLong(token).flip();
    }

    /** Deletes a live claim of the token's owner. Parameters: namespace, id, token. */
    String release() {
        return "DELETE FROM " + table + " WHERE namespace = ? AND id = ? AND token = ? AND state = " + CLAIMED
                + " AND expires_at > " + now();
    }

    /**
     * Extends a live claim's lease from now, keeping how long it is remembered after the lease.
     * {@code expires_at} is assigned first: MariaDB evaluates assignments left to right with the
     * values already assigned. Parameters: lease micros, lease micros, namespace, id, token.
     */
    String renew() {
        return "UPDATE " + table + " SET expires_at = "
                + plusMicros(now(), "? + " + microsBetween("lease_until", "expires_at"))
                + ", lease_until = " + plusMicros(now(), "?")
                + " WHERE namespace = ? AND id = ? AND token = ? AND state = " + CLAIMED + " AND expires_at > " + now();
    }

    /**
     * Counts a start of a live claim of the token's owner; like {@link #release()}, it holds while the
     * claim is remembered, even past its lease, until another claim takes the key over.
     * Parameters: namespace, id, token.
     */
    String countStart() {
        return "UPDATE " + table + " SET starts = starts + 1 WHERE namespace = ? AND id = ? AND token = ? AND state = "
                + CLAIMED + " AND expires_at > " + now();
    }

    /**
     * Records a start ({@link #countStart()}) and answers the count, or 0 when the token does not own a live
     * claim. Here: the update, then a read of the row in the same transaction, so the row stays locked
     * in between and racing starts each read their own count. Dialects that can return the updated row
     * from the update itself do so in one statement.
     */
    int recordStart(Handle handle, byte[] namespace, byte[] id, long token) {
        return handle.inTransaction(transaction -> {
            int updated = transaction.createUpdate(countStart())
                    .bind(0, namespace).bind(1, id).bind(2, token)
                    .execute();
            if (updated == 0) {
                return 0;
            }
            return transaction.createQuery("SELECT starts FROM " + table + " WHERE namespace = ? AND id = ? AND token = ?")
                    .bind(0, namespace).bind(1, id).bind(2, token)
                    .mapTo(Integer.class)
                    .one();
        });
    }

    // ------------------------------------------------------------------ operator view

    /** Whether a row is seen by a claim: remembered, and completed or with its lease running. */
    final String live() {
        String now = now();
        return "expires_at > " + now + " AND (state = " + COMPLETED + " OR lease_until > " + now + ")";
    }

    /**
     * Reads a live row: state, attempts, fingerprint, microseconds until the lease ends (NULL once
     * completed) and until the row is forgotten, starts. Parameters: namespace, id.
     */
    String inspect() {
        return "SELECT state, attempts, fingerprint, " + microsBetween(now(), "lease_until") + ", "
                + microsBetween(now(), "expires_at") + ", starts FROM " + table + " WHERE namespace = ? AND id = ? AND "
                + live();
    }

    /** Deletes the key's row if it is live. Parameters: namespace, id. */
    String deleteLive() {
        return "DELETE FROM " + table + " WHERE namespace = ? AND id = ? AND " + live();
    }

    /** Deletes the key's row if a claim would take it over (forgotten, or its lease over). Parameters: namespace, id. */
    String deleteOver() {
        return "DELETE FROM " + table + " WHERE namespace = ? AND id = ? AND (" + claimTakeover("") + ")";
    }

    /** Counts the live rows per state. */
    String countLive() {
        return "SELECT state, COUNT(*) FROM " + table + " WHERE " + live() + " GROUP BY state";
    }

    /** Deletes at most the given number of expired rows. Parameter: the batch size. */
    abstract String purge();

    /**
     * Reads a page of one namespace's live rows, in {@code id} order (the primary key's, bytes compared unsigned),
     * after a keyset cursor: id, state, attempts, fingerprint, microseconds until the lease ends (NULL once
     * completed) and until the row is forgotten, starts. Parameters: namespace, the ID prefix ({@code id >= ?});
     * then the cursor ({@code id > ?}) if {@code after}; then the prefix's upper bound ({@code id < ?}) if
     * {@code below}; then the limit.
     *
     * @param state only rows in this state, or {@code null} for both
     */
    final String list(StoredKey.State state, boolean after, boolean below) {
        String now = now();
        String live = state == null ? live()
                : state == StoredKey.State.CLAIMED
                        ? "state = " + CLAIMED + " AND lease_until > " + now + " AND expires_at > " + now
                        : "state = " + COMPLETED + " AND expires_at > " + now;
        return "SELECT id, state, attempts, fingerprint, " + microsBetween(now, "lease_until") + ", "
                + microsBetween(now, "expires_at") + ", starts FROM " + table + " WHERE namespace = ? AND id >= ?"
                + (after ? " AND id > ?" : "") + (below ? " AND id < ?" : "") + " AND " + live
                + " ORDER BY id LIMIT ?";
    }

    /**
     * Whether a row is a completed key of the namespace, remembered, and forgotten within the microseconds given.
     * Parameters: namespace, microseconds.
     */
    final String completedWithin() {
        return "namespace = ? AND state = " + COMPLETED + " AND expires_at > " + now() + " AND expires_at < "
                + plusMicros(now(), "?");
    }

    /**
     * Deletes at most {@code limit} completed rows of the namespace that are forgotten within {@code micros} from
     * now ({@link #completedWithin()}), as one statement; answers how many. Here: {@link #purgeCompleted()} with
     * the namespace, the microseconds and the limit.
     */
    int purgeCompleted(Handle handle, byte[] namespace, long micros, int limit) {
        return handle.createUpdate(purgeCompleted()).bind(0, namespace).bind(1, micros).bind(2, limit).execute();
    }

    /** The statement of {@link #purgeCompleted(Handle, byte[], long, int)}: a bounded delete, as each database has one. */
    abstract String purgeCompleted();

    // ------------------------------------------------------------------ failures

    /**
     * Whether the statement lost a race that running it again resolves: a deadlock, a serialization
     * failure, or a concurrent insert of the same key. Nothing of the failed statement remains.
     */
    boolean isConflict(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.startsWith("40") || state.equals("23505"));
    }

    /** Vendor error codes meaning "try again later" that the SQLState alone does not tell. */
    boolean isRetriableVendorCode(int errorCode) {
        return false;
    }

    @Override
    public String toString() {
        return product() + " dialect for table " + table;
    }
}
