package dev.idem.store.jdbc;

import dev.idem.spi.StoreException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * What the store does about its table at start ({@code store.jdbc.schema}): {@code create} it if
 * absent and then check it, {@code validate} that it exists with every column and the primary key
 * the store needs, or trust it ({@code none}).
 */
final class Schema {

    static final String CREATE = "create";
    static final String VALIDATE = "validate";
    static final String NONE = "none";

    private final Jdbi jdbi;
    private final Dialect dialect;
    private final Failures failures;

    Schema(Jdbi jdbi, Dialect dialect, Failures failures) {
        this.jdbi = jdbi;
        this.dialect = dialect;
        this.failures = failures;
    }

    /** @throws StoreException when the table cannot be created or does not have the store's shape */
    void prepare(String mode) {
        switch (mode) {
            case CREATE -> {
                create();
                validate(mode);
            }
            case VALIDATE -> validate(mode);
            case NONE -> { }
            default -> throw new IllegalArgumentException("unknown schema mode " + mode);
        }
    }

    private void create() {
        try {
            jdbi.useHandle(handle -> {
                for (String ddl : dialect.createTable()) {
                    handle.execute(ddl);
                }
            });
        } catch (RuntimeException e) {
            // Several processes starting at once may race to create the table (PostgreSQL then reports
            // a duplicate type); what counts is whether the table is there afterwards.
            if (!missing().isEmpty()) {
                throw failures.of("creating the table (schema: create)", e);
            }
        }
    }

    private void validate(String mode) {
        List<String> problems = missing();
        if (problems.isEmpty()) {
            return;
        }
        throw new StoreException(failures.where() + ": the table does not fit the store (store.jdbc.schema: " + mode
                + "): " + String.join("; ", problems) + ". Let the store create it in an empty database with "
                + "schema: create, or create it yourself:\n" + String.join(";\n", dialect.createTable()) + ";", false);
    }

    /** What the table lacks, each as a phrase; empty when it fits. */
    List<String> missing() {
        try {
            return jdbi.withHandle(this::missing);
        } catch (SQLException | RuntimeException e) {
            throw failures.of("checking the table", e);
        }
    }

    private List<String> missing(Handle handle) throws SQLException {
        Connection connection = handle.getConnection();
        DatabaseMetaData meta = connection.getMetaData();
        String name = storedName(meta, dialect.table);
        TableRef table = find(meta, connection, name);
        if (table == null) {
            return List.of("table '" + dialect.table + "' does not exist in "
                    + (connection.getSchema() != null ? "schema '" + connection.getSchema() + "'" : "catalog '"
                            + connection.getCatalog() + "'"));
        }
        TreeSet<String> columns = new TreeSet<>();
        try (ResultSet rs = meta.getColumns(table.catalog, table.schema, table.name, "%")) {
            while (rs.next()) {
                if (table.name.equals(rs.getString("TABLE_NAME"))) {
                    columns.add(rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT));
                }
            }
        }
        List<String> problems = new ArrayList<>();
        List<String> absent = new ArrayList<>();
        for (String column : Dialect.COLUMNS) {
            if (!columns.contains(column)) {
                absent.add(column);
            }
        }
        if (!absent.isEmpty()) {
            problems.add("table '" + dialect.table + "' lacks column" + (absent.size() > 1 ? "s " : " ")
                    + String.join(", ", absent) + " (it has " + String.join(", ", columns) + ")");
        }
        TreeSet<String> key = new TreeSet<>();
        try (ResultSet rs = meta.getPrimaryKeys(table.catalog, table.schema, table.name)) {
            while (rs.next()) {
                key.add(rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT));
            }
        }
        if (!key.equals(new TreeSet<>(List.of("namespace", "id")))) {
            problems.add("its primary key is " + (key.isEmpty() ? "missing" : "(" + String.join(", ", key) + ")")
                    + " but must be (namespace, id): without it two consumers could claim one key");
        }
        return problems;
    }

    private record TableRef(String catalog, String schema, String name) {
    }

    /** The table in the connection's current schema (or catalog), matched exactly by its stored name. */
    private static TableRef find(DatabaseMetaData meta, Connection connection, String name) throws SQLException {
        String schema = connection.getSchema();
        String catalog = connection.getCatalog();
        try (ResultSet rs = meta.getTables(catalog, schema, name, null)) {
            while (rs.next()) {
                if (name.equals(rs.getString("TABLE_NAME"))) {
                    return new TableRef(rs.getString("TABLE_CAT"), rs.getString("TABLE_SCHEM"), name);
                }
            }
        }
        return null;
    }

    /** How the database stores an unquoted identifier: folded to upper case (H2), lower case (PostgreSQL) or as written. */
    private static String storedName(DatabaseMetaData meta, String identifier) throws SQLException {
        if (meta.storesUpperCaseIdentifiers()) {
            return identifier.toUpperCase(Locale.ROOT);
        }
        if (meta.storesLowerCaseIdentifiers()) {
            return identifier.toLowerCase(Locale.ROOT);
        }
        return identifier;
    }
}
