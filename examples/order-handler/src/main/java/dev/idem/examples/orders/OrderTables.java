package dev.idem.examples.orders;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The tables of {@link TransactionalOrderPaymentHandler}, as {@code schema.sql} beside this class declares
 * them, and what to do when they are missing.
 *
 * <p>The check reads the database's metadata, which commits nothing. Creation is only ever done inside
 * the message's transaction, and only where the database says DDL is transactional (PostgreSQL): then
 * the tables commit, or roll back, together with the claim and the first payment. On MariaDB, MySQL
 * and H2 every DDL statement commits the open transaction, claim included, so a failure later in the
 * run could no longer roll the claim back and the message would count as done without its effect;
 * there the tables must be created beforehand, and this class refuses with the DDL to run.
 *
 * <p>Thread-safe. Once the tables are seen, later runs skip the check.
 */
final class OrderTables {

    static final List<String> NAMES = List.of("order_status", "payment_events");

    private final boolean createAllowed;
    private volatile boolean seen;

    OrderTables(boolean createAllowed) {
        this.createAllowed = createAllowed;
    }

    /** The statements of {@code schema.sql}, in order. */
    static List<String> ddl() {
        try (InputStream in = OrderTables.class.getResourceAsStream("schema.sql")) {
            if (in == null) {
                throw new IllegalStateException("schema.sql is missing beside " + OrderTables.class.getName()
                        + "; the handler JAR is incomplete");
            }
            StringBuilder sql = new StringBuilder();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (!line.strip().startsWith("--")) {
                    sql.append(line).append('\n');
                }
            }
            List<String> statements = new ArrayList<>();
            for (String statement : sql.toString().split(";")) {
                if (!statement.isBlank()) {
                    statements.add(statement.strip());
                }
            }
            return statements;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read schema.sql from the handler JAR", e);
        }
    }

    /**
     * Makes sure the tables exist, creating them in {@code transaction} where that is safe and allowed.
     *
     * @param pipeline the pipeline running the handler, to name its setting in messages
     * @throws IllegalStateException when a table is missing and cannot be created here; the message
     *                               names the tables, the reason and the DDL to run
     */
    void ensure(Connection transaction, String pipeline) throws SQLException {
        if (seen) {
            return;
        }
        DatabaseMetaData metadata = transaction.getMetaData();
        List<String> missing = missing(transaction, metadata);
        if (missing.isEmpty()) {
            seen = true;
            return;
        }
        String product = metadata.getDatabaseProductName();
        String setting = "pipelines." + pipeline + ".handler-settings." + TransactionalOrderPaymentHandler.CREATE_TABLES;
        String createThem = " Create them before starting the pipeline, with schema.sql from the handler JAR"
                + " (dev/idem/examples/orders/schema.sql), then replay the dead-lettered messages:\n"
                + String.join(";\n", ddl()) + ";";
        if (!createAllowed) {
            throw new IllegalStateException("The tables " + missing + " of " + TransactionalOrderPaymentHandler.class
                    .getSimpleName() + " are missing in " + product + "." + createThem + "\nOn PostgreSQL you may"
                    + " instead set " + setting + ": true to have the first message create them in its transaction.");
        }
        if (metadata.dataDefinitionCausesTransactionCommit()
                || !metadata.supportsDataDefinitionAndDataManipulationTransactions()) {
            throw new IllegalStateException("The tables " + missing + " are missing, and " + setting
                    + " is true, but " + product + " commits the"
                    + " open transaction on CREATE TABLE: creating them here would commit the dedup claim before"
                    + " this message's writes, so the handler will not." + createThem);
        }
        try (Statement statement = transaction.createStatement()) {
            for (String ddl : ddl()) {
                statement.execute(ddl);
            }
        }
        // Not marked seen: the tables exist for others only once this transaction commits; the next run checks again.
    }

    private static List<String> missing(Connection connection, DatabaseMetaData metadata) throws SQLException {
        String catalog = connection.getCatalog();
        String schema = connection.getSchema();
        String escape = metadata.getSearchStringEscape();
        List<String> missing = new ArrayList<>();
        for (String table : NAMES) {
            if (!exists(metadata, catalog, schema, table, escape)) {
                missing.add(table);
            }
        }
        return missing;
    }

    /** Looks the table up as written, upper- and lower-cased, since databases store unquoted names differently. */
    private static boolean exists(DatabaseMetaData metadata, String catalog, String schema, String table, String escape)
            throws SQLException {
        Set<String> spellings = new LinkedHashSet<>(List.of(table, table.toUpperCase(Locale.ROOT),
                table.toLowerCase(Locale.ROOT)));
        for (String name : spellings) {
            // '_' is a wildcard in metadata patterns: escape it, or order_status would match orderXstatus.
            String pattern = escape == null || escape.isEmpty() ? name : name.replace("_", escape + "_");
            try (ResultSet tables = metadata.getTables(catalog, schema, pattern, null)) {
                if (tables.next()) {
                    return true;
                }
            }
        }
        return false;
    }
}
