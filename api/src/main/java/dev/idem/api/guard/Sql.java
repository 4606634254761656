package dev.idem.api.guard;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** Identifier validation, parameter binding and message formatting shared by the guards. */
final class Sql {

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final Pattern QUALIFIED_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    private Sql() {
    }

    /**
     * Names are written into the SQL text (only values can be bound), so anything but a plain identifier is
     * refused rather than quoted: quoting rules differ between databases, and a refused name is a clear error.
     */
    static String table(String table) {
        Objects.requireNonNull(table, "table");
        if (!QUALIFIED_NAME.matcher(table).matches()) {
            throw new IllegalArgumentException("Invalid table name '" + table + "': must be letters, digits and"
                    + " underscores, not starting with a digit, optionally qualified by a schema (such as orders or"
                    + " shop.orders)");
        }
        return table;
    }

    static String column(String table, String role, String column) {
        Objects.requireNonNull(column, role);
        if (!NAME.matcher(column).matches()) {
            throw new IllegalArgumentException("Invalid " + role + " '" + column + "' for table " + table
                    + ": must be letters, digits and underscores, not starting with a digit, and unqualified (such"
                    + " as order_id)");
        }
        return column;
    }

    /** Refuses a column given twice: unquoted names are case-insensitive on the databases the guards support. */
    static void distinct(String table, Map<String, String> columnsByRole) {
        Map<String, String> seen = new TreeMap<>();
        columnsByRole.forEach((role, column) -> {
            String earlier = seen.putIfAbsent(column.toLowerCase(Locale.ROOT), role);
            if (earlier != null) {
                throw new IllegalArgumentException("The " + role + " of table " + table + " is " + column
                        + ", which is already its " + earlier + "; they must be different columns");
            }
        });
    }

    /**
     * The columns to set, validated and sorted by name, so the SQL text is the same for the same columns
     * whatever map the caller passed.
     */
    static TreeMap<String, Object> columns(String table, Map<String, ?> values, Set<String> reserved) {
        Objects.requireNonNull(values, "columns");
        TreeMap<String, Object> sorted = new TreeMap<>();
        values.forEach((column, value) -> {
            column(table, "column", column);
            if (reserved.contains(column.toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("Column " + column + " of table " + table + " is set by the guard"
                        + " itself; leave it out of the columns to set");
            }
            sorted.put(column, value);
        });
        return sorted;
    }

    /** A JDBC query timeout: whole seconds, rounded up, at least 1 (0 would mean none). */
    static int timeoutSeconds(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            return 1;
        }
        long seconds = timeout.getSeconds() + (timeout.getNano() > 0 ? 1 : 0);
        return (int) Math.min(Integer.MAX_VALUE, seconds);
    }

    static void timeout(PreparedStatement statement, int seconds) throws SQLException {
        if (seconds > 0) {
            statement.setQueryTimeout(seconds);
        }
    }

    /** An entity as messages name it: {@code orders id='o-17'}. */
    static String row(String table, String idColumn, Object id) {
        return table + " " + idColumn + "=" + literal(id);
    }

    static String literal(Object value) {
        return value instanceof CharSequence ? "'" + value + "'" : String.valueOf(value);
    }
}
