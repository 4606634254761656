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
 * What the store does about its outbox table at start, as {@link Schema} does about the keys table and after
 * it, following the same {@code store.jdbc.schema}: {@code create} it if absent and check it, {@code validate}
 * that it exists with every column, its primary key on {@code id} and ids the database generates, naming the
 * statement that would create it; or trust it ({@code none}).
 *
 * <p>Every store has the table, used or not: transactional mode writes to it when a handler emits messages,
 * and whether one will is not known at start.
 */
final class OutboxSchema {

    private final Jdbi jdbi;
    private final OutboxTable table;
    private final Failures failures;

    OutboxSchema(Jdbi jdbi, OutboxTable table, Failures failures) {
        this.jdbi = jdbi;
        this.table = table;
        this.failures = failures;
    }

    /** @throws StoreException when the table cannot be created or does not have the outbox's shape */
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
                throw failures.of("creating outbox table " + table.name + " (schema: create)", e);
            }
        }
    }

    private void validate(String mode) {
        List<String> problems = problems();
        if (!problems.isEmpty()) {
            throw new StoreException(failures.where() + ": the outbox table does not fit the store (store.jdbc.schema: "
                    + mode + "): " + String.join("; ", problems) + ". Transactional mode writes the messages handlers "
                    + "emit to it. Let the store create it with schema: create, or create it yourself:\n"
                    + String.join(";\n", table.createTable()) + ";", false);
        }
    }

    /** What the table lacks, each as a phrase; empty when it fits. */
    List<String> problems() {
        try {
            return jdbi.withHandle(this::problems);
        } catch (SQLException | RuntimeException e) {
            throw failures.of("checking outbox table " + table.name, e);
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
        boolean idGenerated = false;
        try (ResultSet rs = meta.getColumns(found.catalog(), found.schema(), found.name(), "%")) {
            while (rs.next()) {
                if (found.name().equals(rs.getString("TABLE_NAME"))) {
                    String column = rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT);
                    columns.add(column);
                    if (column.equals("id")) {
                        idGenerated = "YES".equalsIgnoreCase(rs.getString("IS_AUTOINCREMENT"));
                    }
                }
            }
        }
        List<String> problems = new ArrayList<>();
        List<String> absent = OutboxTable.COLUMNS.stream().filter(c -> !columns.contains(c)).toList();
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
        if (!key.equals(new TreeSet<>(List.of("id")))) {
            problems.add("its primary key is " + (key.isEmpty() ? "missing" : "(" + String.join(", ", key) + ")")
                    + " but must be (id): the relay reads the oldest rows through it");
        }
        if (columns.contains("id") && !idGenerated) {
            problems.add("its id column is not generated by the database (an identity or AUTO_INCREMENT column): "
                    + "rows are written without one");
        }
        return problems;
    }
}
