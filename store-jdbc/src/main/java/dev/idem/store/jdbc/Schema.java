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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the store does about its table at start ({@code store.jdbc.schema}): {@code create} it if
 * absent, add the {@link Dialect#ADDED_COLUMNS} a table made by an earlier version lacks, and then check
 * it; {@code validate} that it exists with every column and the primary key the store needs, naming the
 * statements that would fix it; or trust it ({@code none}).
 */
final class Schema {

    private static final Logger log = LoggerFactory.getLogger(Schema.class);

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
                addMissingColumns();
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
            if (!check().problems().isEmpty()) {
                throw failures.of("creating the table (schema: create)", e);
            }
        }
    }

    /**
     * Adds the columns a table made by an earlier version lacks, when it otherwise fits: a table that
     * lacks more is not the store's, and is left for {@link #validate} to report.
     */
    private void addMissingColumns() {
        for (String column : check().addable()) {
            String ddl = dialect.addColumn(column);
            try {
                jdbi.useHandle(handle -> handle.execute(ddl));
                log.info("{}: added column {} to the table made by an earlier version (schema: create): {}",
                        failures.where(), column, ddl);
            } catch (RuntimeException e) {
                // Processes starting at once race to add it (the losers get a duplicate column); what counts
                // is whether it is there afterwards.
                if (check().addable().contains(column)) {
                    throw failures.of("adding column " + column + " to the table (schema: create) with " + ddl, e);
                }
            }
        }
    }

    private void validate(String mode) {
        Fit fit = check();
        if (!fit.problems().isEmpty()) {
            throw new StoreException(failures.where() + ": the table does not fit the store (store.jdbc.schema: "
                    + mode + "): " + String.join("; ", fit.problems()) + ". Let the store create it in an empty "
                    + "database with schema: create, or create it yourself:\n"
                    + String.join(";\n", dialect.createTable()) + ";", false);
        }
        if (!fit.addable().isEmpty()) {
            List<String> ddl = fit.addable().stream().map(dialect::addColumn).toList();
            throw new StoreException(failures.where() + ": the table does not fit the store (store.jdbc.schema: "
                    + mode + "): table '" + dialect.table + "' lacks " + columns(fit.addable())
                    + ", which this version of the store needs and tables made by earlier versions lack. Add "
                    + (ddl.size() > 1 ? "them" : "it") + " (rows already there get the default) with:\n"
                    + String.join(";\n", ddl) + ";\nor let the store add " + (ddl.size() > 1 ? "them" : "it")
                    + " at start with schema: create.", false);
        }
    }

    private static String columns(List<String> names) {
        return "column" + (names.size() > 1 ? "s " : " ") + String.join(", ", names);
    }

    /**
     * What the check of the table found.
     *
     * @param problems what the table lacks that only creating it afresh fixes, each as a phrase
     * @param addable the {@link Dialect#ADDED_COLUMNS} it lacks, when that is all it lacks
     */
    record Fit(List<String> problems, List<String> addable) {
    }

    /** What the table lacks; both lists empty when it fits. */
    Fit check() {
        try {
            return jdbi.withHandle(this::check);
        } catch (SQLException | RuntimeException e) {
            throw failures.of("checking the table", e);
        }
    }

    private Fit check(Handle handle) throws SQLException {
        Connection connection = handle.getConnection();
        DatabaseMetaData meta = connection.getMetaData();
        String name = storedName(meta, dialect.table);
        TableRef table = find(meta, connection, name);
        if (table == null) {
            return new Fit(List.of("table '" + dialect.table + "' does not exist in "
                    + (connection.getSchema() != null ? "schema '" + connection.getSchema() + "'" : "catalog '"
                            + connection.getCatalog() + "'")), List.of());
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
        boolean onlyAddedColumnsAbsent = Dialect.ADDED_COLUMNS.keySet().containsAll(absent);
        if (!absent.isEmpty() && !onlyAddedColumnsAbsent) {
            problems.add("table '" + dialect.table + "' lacks " + columns(absent) + " (it has "
                    + String.join(", ", columns) + ")");
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
        if (!problems.isEmpty() && onlyAddedColumnsAbsent && !absent.isEmpty()) {
            // Made afresh, the table gets these columns too; listing them saves a second round.
            problems.add(0, "table '" + dialect.table + "' lacks " + columns(absent));
        }
        return problems.isEmpty() ? new Fit(List.of(), absent) : new Fit(problems, List.of());
    }

    record TableRef(String catalog, String schema, String name) {
    }

    /** The table in the connection's current schema (or catalog), matched exactly by its stored name. */
    static TableRef find(DatabaseMetaData meta, Connection connection, String name) throws SQLException {
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
    static String storedName(DatabaseMetaData meta, String identifier) throws SQLException {
        if (meta.storesUpperCaseIdentifiers()) {
            return identifier.toUpperCase(Locale.ROOT);
        }
        if (meta.storesLowerCaseIdentifiers()) {
            return identifier.toLowerCase(Locale.ROOT);
        }
        return identifier;
    }
}
