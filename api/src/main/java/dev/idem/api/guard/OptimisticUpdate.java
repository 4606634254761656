package dev.idem.api.guard;

import dev.idem.api.ConcurrentUpdateException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * An optimistic update on a handler's own table: a row carries a version number, a handler reads the row and
 * its version, computes, and writes with
 * {@code UPDATE table SET a = ?, ..., version = version + 1 WHERE id = ? AND version = ?}. When another writer
 * got there first the update matches no row and {@link #update} throws {@link ConcurrentUpdateException}; the
 * runtime then runs the handler again at once (a fresh transaction in transactional mode), which reads the row
 * afresh, up to the pipeline's {@code retry.conflict-attempts}. This class never retries or waits itself.
 *
 * <pre>{@code
 * static final OptimisticUpdate ACCOUNTS = OptimisticUpdate.of("accounts", "id", "version");
 *
 * Versioned<Map<String, Object>> account = ACCOUNTS.read(tx, accountId, "balance").orElseThrow(...);
 * BigDecimal balance = ((BigDecimal) account.value().get("balance")).add(amount);
 * ACCOUNTS.update(tx, accountId, account.version(), Map.of("balance", balance));
 * }</pre>
 *
 * <p><b>A missing row</b> at {@link #update} is also a {@link ConcurrentUpdateException}: the caller read the
 * row (and its version) before, so it was deleted since, and the re-run reads it afresh and finds it gone,
 * which the handler then deals with (its read sees no row). A handler that never read the row keeps failing
 * that way and ends as an ordinary failure once the conflict attempts are used up.
 *
 * <p><b>Names.</b> Table and column names are written into the SQL, so they must be plain identifiers
 * (letters, digits, underscores, not starting with a digit; the table may be {@code schema.table}); anything
 * else is refused with {@link IllegalArgumentException}. IDs and values are always bound as parameters, with
 * {@code setObject}. The version column holds a non-null integer ({@code BIGINT}).
 *
 * <p><b>Threads.</b> Immutable and thread-safe: declare one as a constant and share it. The methods use the
 * given {@link Connection} and leave it as it was: they never commit, roll back or close it.
 */
public final class OptimisticUpdate {

    private static final String SERIALIZATION_FAILURE = "40001";

    private final String table;
    private final String idColumn;
    private final String versionColumn;
    private final int queryTimeoutSeconds;

    private OptimisticUpdate(String table, String idColumn, String versionColumn, int queryTimeoutSeconds) {
        this.table = table;
        this.idColumn = idColumn;
        this.versionColumn = versionColumn;
        this.queryTimeoutSeconds = queryTimeoutSeconds;
    }

    /**
     * Optimistic updates of {@code table}, whose rows are found by {@code idColumn} and versioned by
     * {@code versionColumn}.
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if a name is not an SQL identifier, or the two columns are the same
     */
    public static OptimisticUpdate of(String table, String idColumn, String versionColumn) {
        Sql.table(table);
        Sql.column(table, "id column", idColumn);
        Sql.column(table, "version column", versionColumn);
        Map<String, String> roles = new LinkedHashMap<>();
        roles.put("id column", idColumn);
        roles.put("version column", versionColumn);
        Sql.distinct(table, roles);
        return new OptimisticUpdate(table, idColumn, versionColumn, 0);
    }

    /**
     * This helper with a JDBC query timeout on its statements, such as the run's {@code context.remaining()}:
     * rounded up to whole seconds, at least one. Without it, statements have none. Cheap: meant to be called
     * per run.
     */
    public OptimisticUpdate withQueryTimeout(Duration timeout) {
        return new OptimisticUpdate(table, idColumn, versionColumn, Sql.timeoutSeconds(timeout));
    }

    /**
     * The row's version, read without locking.
     *
     * @return the version, or empty when there is no row with that ID
     * @throws IllegalStateException if the version column is {@code NULL}
     * @throws SQLException          as the database reports it
     */
    public OptionalLong version(Connection connection, Object id) throws SQLException {
        return read(connection, id, List.of()).map(row -> OptionalLong.of(row.version())).orElse(OptionalLong.empty());
    }

    /**
     * The row's {@code columns} and its version, read without locking.
     *
     * @param columns the columns to read; the map's keys are these names, as given, in this order
     * @return an unmodifiable map (values as {@code getObject} returns them, possibly {@code null}) with the
     *         version, or empty when there is no row with that ID
     * @throws IllegalArgumentException if a column is not an SQL identifier
     * @throws IllegalStateException    if the version column is {@code NULL}
     * @throws SQLException             as the database reports it
     */
    public Optional<Versioned<Map<String, Object>>> read(Connection connection, Object id, String... columns)
            throws SQLException {
        return read(connection, id, List.of(columns));
    }

    private Optional<Versioned<Map<String, Object>>> read(Connection connection, Object id, List<String> columns)
            throws SQLException {
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(id, "id");
        StringBuilder sql = new StringBuilder("SELECT ").append(versionColumn);
        for (String column : columns) {
            sql.append(", ").append(Sql.column(table, "column", column));
        }
        sql.append(" FROM ").append(table).append(" WHERE ").append(idColumn).append(" = ?");
        try (PreparedStatement select = connection.prepareStatement(sql.toString())) {
            Sql.timeout(select, queryTimeoutSeconds);
            select.setObject(1, id);
            try (ResultSet row = select.executeQuery()) {
                if (!row.next()) {
                    return Optional.empty();
                }
                long version = row.getLong(1);
                if (row.wasNull()) {
                    throw new IllegalStateException(Sql.row(table, idColumn, id) + " has no " + versionColumn
                            + " (NULL): the version column must be NOT NULL, starting at 0 for instance");
                }
                Map<String, Object> values = new LinkedHashMap<>();
                for (int i = 0; i < columns.size(); i++) {
                    values.put(columns.get(i), row.getObject(i + 2));
                }
                return Optional.of(new Versioned<>(Collections.unmodifiableMap(values), version));
            }
        }
    }

    /**
     * Sets {@code columns} on the row and increments its version, if the row is still at
     * {@code expectedVersion}. The columns are written in the order of their names, so the SQL is the same for
     * the same columns; an empty map only increments the version.
     *
     * @param connection      the transaction to work in; not committed, rolled back or closed
     * @param id              the row's ID
     * @param expectedVersion the version the caller read
     * @param columns         column names to values (bound with {@code setObject}; {@code null} writes NULL)
     * @return the row's new version, {@code expectedVersion + 1}
     * @throws ConcurrentUpdateException if the row is at another version, or gone, naming the table, the ID, the
     *                                   expected version and the one found; also when the database reports a
     *                                   serialization failure (SQLState 40001) for the
     *                                   {@code UPDATE}. Let it propagate: the runtime re-runs the handler at once
     * @throws IllegalArgumentException  if a column is not an SQL identifier or is the id or version column
     * @throws IllegalStateException     if the {@code UPDATE} matched more than one row (the id column is not
     *                                   unique); the rows were updated, so roll the transaction back
     * @throws SQLException              as the database reports it otherwise
     */
    public long update(Connection connection, Object id, long expectedVersion, Map<String, ?> columns)
            throws SQLException {
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(id, "id");
        TreeMap<String, Object> values = Sql.columns(table, columns,
                Set.of(idColumn.toLowerCase(Locale.ROOT), versionColumn.toLowerCase(Locale.ROOT)));
        StringBuilder sql = new StringBuilder("UPDATE ").append(table).append(" SET ");
        values.keySet().forEach(column -> sql.append(column).append(" = ?, "));
        sql.append(versionColumn).append(" = ").append(versionColumn).append(" + 1 WHERE ").append(idColumn)
                .append(" = ? AND ").append(versionColumn).append(" = ?");
        int rows;
        try (PreparedStatement update = connection.prepareStatement(sql.toString())) {
            Sql.timeout(update, queryTimeoutSeconds);
            int index = 1;
            for (Object value : values.values()) {
                update.setObject(index++, value);
            }
            update.setObject(index++, id);
            update.setLong(index, expectedVersion);
            rows = update.executeUpdate();
        } catch (SQLException e) {
            if (SERIALIZATION_FAILURE.equals(e.getSQLState())) {
                ConcurrentUpdateException conflict = new ConcurrentUpdateException("Updating "
                        + Sql.row(table, idColumn, id) + " at version " + expectedVersion + " failed to serialize"
                        + " with a concurrent transaction (" + e.getMessage() + "); the handler runs again");
                conflict.initCause(e);
                throw conflict;
            }
            throw e;
        }
        if (rows == 1) {
            return expectedVersion + 1;
        }
        if (rows > 1) {
            throw new IllegalStateException("Updating " + Sql.row(table, idColumn, id) + " at version "
                    + expectedVersion + " updated " + rows + " rows: the id column " + idColumn
                    + " must be unique (a primary key)");
        }
        throw conflict(connection, id, expectedVersion);
    }

    private ConcurrentUpdateException conflict(Connection connection, Object id, long expectedVersion)
            throws SQLException {
        OptionalLong current = version(connection, id);
        if (current.isEmpty()) {
            return new ConcurrentUpdateException(table + " has no row with " + idColumn + "=" + Sql.literal(id)
                    + " (expected at version " + expectedVersion + "): it was deleted since it was read, or never"
                    + " existed; the handler runs again and reads it afresh");
        }
        String found = current.getAsLong() == expectedVersion
                ? "is still at version " + expectedVersion + " in this transaction's snapshot, but a concurrent"
                        + " transaction has changed it"
                : "is at version " + current.getAsLong() + ", not the expected " + expectedVersion;
        return new ConcurrentUpdateException(Sql.row(table, idColumn, id) + " " + found
                + ": it changed since it was read; the handler runs again and reads it afresh");
    }
}
