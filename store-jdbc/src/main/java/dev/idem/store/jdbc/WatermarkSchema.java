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
 * What the store does about its watermark table ({@link WatermarkTable}) at start, as {@link Schema} does about the
 * keys table and after it, following the same {@code store.jdbc.schema}: {@code create} it and its index if absent
 * and check it; {@code validate} that it exists with every column and its primary key, naming the statements that
 * would create it; or trust it ({@code none}).
 *
 * <p>Every store has the table, used or not: whether a pipeline will guard sequences is not known at start. So a
 * database whose schema is managed elsewhere ({@code validate}) needs it created once, with the statements the
 * error names, even by pipelines that never use the sequence guard.
 */
final class WatermarkSchema {

    private final Jdbi jdbi;
    private final WatermarkTable table;
    private final Failures failures;

    WatermarkSchema(Jdbi jdbi, WatermarkTable table, Failures failures) {
        this.jdbi = jdbi;
        this.table = table;
        this.failures = failures;
    }

    /** @throws StoreException when the table cannot be created or does not have the watermarks' shape */
    void prepare(String mode) {
        switch (mode) {
            case Schema.CREATE -> {
                create();
                validate(mode);
            }
            case Schema.VALIDATE -> validate(mode);
            case Schema.NONE -> { }
            default -> throw new IllegalArgumentException("unknown schema mode " + mode);
        }
    }

    private void create() {
        try {
            jdbi.useHandle(handle -> {
                for (String ddl : table.createTable()) {
                    handle.execute(ddl);
                }
            });
        } catch (RuntimeException e) {
            // Processes starting at once race to create it; what counts is whether it is there afterwards.
            if (!problems().isEmpty()) {
                throw failures.of("creating watermark table " + table.name + " (schema: create)", e);
            }
        }
    }

    private void validate(String mode) {
        List<String> problems = problems();
        if (!problems.isEmpty()) {
            throw new StoreException(failures.where() + ": the sequence watermark table does not fit the store "
                    + "(store.jdbc.schema: " + mode + "): " + String.join("; ", problems) + ". The sequence guard keeps "
                    + "each aggregate's watermark there, and stores made before it lack the table. Let the store create "
                    + "it with schema: create, or create it yourself:\n" + String.join(";\n", table.createTable()) + ";",
                    false);
        }
    }

    /** What the table lacks, each as a phrase; empty when it fits. */
    List<String> problems() {
        try {
            return jdbi.withHandle(this::problems);
        } catch (SQLException | RuntimeException e) {
            throw failures.of("checking watermark table " + table.name, e);
        }
    }

    private List<String> problems(Handle handle) throws SQLException {
        Connection connection = handle.getConnection();
        DatabaseMetaData meta = connection.getMetaData();
        Schema.TableRef found = Schema.find(meta, connection, Schema.storedName(meta, table.name));
        if (found == null) {
            return List.of("table '" + table.name + "' does not exist in " + (connection.getSchema() != null
                    ? "schema '" + connection.getSchema() + "'" : "catalog '" + connection.getCatalog() + "'"));
        }
        TreeSet<String> columns = new TreeSet<>();
        try (ResultSet rs = meta.getColumns(found.catalog(), found.schema(), found.name(), "%")) {
            while (rs.next()) {
                if (found.name().equals(rs.getString("TABLE_NAME"))) {
                    columns.add(rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT));
                }
            }
        }
        List<String> problems = new ArrayList<>();
        List<String> absent = WatermarkTable.COLUMNS.stream().filter(c -> !columns.contains(c)).toList();
        if (!absent.isEmpty()) {
            problems.add("table '" + table.name + "' lacks column" + (absent.size() > 1 ? "s " : " ")
                    + String.join(", ", absent) + " (it has " + String.join(", ", columns) + ")");
        }
        TreeSet<String> key = new TreeSet<>();
        try (ResultSet rs = meta.getPrimaryKeys(found.catalog(), found.schema(), found.name())) {
            while (rs.next()) {
                key.add(rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT));
            }
        }
        if (!key.equals(new TreeSet<>(WatermarkTable.KEY))) {
            problems.add("its primary key is " + (key.isEmpty() ? "missing" : "(" + String.join(", ", key) + ")")
                    + " but must be (namespace, aggregate): without it two transactions of one aggregate would not"
                    + " serialize on its watermark");
        }
        return problems;
    }
}
