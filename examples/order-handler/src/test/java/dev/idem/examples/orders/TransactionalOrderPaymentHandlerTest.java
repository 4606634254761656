package dev.idem.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.HandlerSettings;
import dev.idem.api.NonRetryableException;
import dev.idem.api.RejectedException;
import dev.idem.handlertest.TestMessage;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The transactional handler against an H2 database, each test's connection standing in for the JDBC
 * store's transaction: auto-commit off, committed or rolled back by the test as the store would.
 */
class TransactionalOrderPaymentHandlerTest {

    private String url;
    /** Keeps the in-memory database alive and serves the test's own queries (auto-commit). */
    private Connection admin;

    @BeforeEach
    void openDatabase() throws SQLException {
        url = "jdbc:h2:mem:orders-" + UUID.randomUUID() + ";LOCK_TIMEOUT=10000";
        admin = DriverManager.getConnection(url);
    }

    @AfterEach
    void closeDatabase() throws SQLException {
        admin.close();
    }

    private void createTables() throws SQLException {
        try (Statement statement = admin.createStatement()) {
            for (String ddl : OrderTables.ddl()) {
                statement.execute(ddl);
            }
        }
    }

    /** A connection in a transaction, as the store hands one over. */
    private Connection transaction() throws SQLException {
        Connection connection = DriverManager.getConnection(url);
        connection.setAutoCommit(false);
        return connection;
    }

    /** One run in its own transaction, committed when the handler returns, rolled back when it throws. */
    private void runAndCommit(TransactionalOrderPaymentHandler handler, TestMessage message) throws Exception {
        try (Connection tx = transaction()) {
            try {
                handler.handle(message, Orders.context().withTransaction(tx));
                tx.commit();
            } catch (Exception e) {
                tx.rollback();
                throw e;
            }
        }
    }

    private List<String> rows(String sql) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Statement statement = admin.createStatement(); ResultSet rs = statement.executeQuery(sql)) {
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                List<String> row = new ArrayList<>();
                for (int i = 1; i <= columns; i++) {
                    row.add(rs.getString(i));
                }
                rows.add(String.join(" ", row));
            }
        }
        return rows;
    }

    private List<String> paymentEvents() throws SQLException {
        return rows("SELECT message_id, order_id, event, amount, outcome FROM payment_events ORDER BY message_id");
    }

    @Test
    void theFirstPaymentOfAnOrderIsAppliedAndEveryRunIsRecorded() throws Exception {
        createTables();
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        runAndCommit(handler, Orders.paid("m-1", "o-1", "12.50"));
        runAndCommit(handler, Orders.paid("m-2", "o-1", "12.50"));
        runAndCommit(handler, Orders.paid("m-3", "o-2", "3"));

        assertThat(paymentEvents()).containsExactly(
                "m-1 o-1 paid 12.50 applied",
                "m-2 o-1 paid 12.50 ignored-already-paid",
                "m-3 o-2 paid 3.00 applied");
        assertThat(rows("SELECT order_id, status FROM order_status ORDER BY order_id"))
                .containsExactly("o-1 PAID", "o-2 PAID");
    }

    @Test
    void aCreatedOrderIsMovedToPaid() throws Exception {
        createTables();
        try (Statement statement = admin.createStatement()) {
            statement.execute("INSERT INTO order_status (order_id, status) VALUES ('o-1', 'CREATED')");
        }

        runAndCommit(new TransactionalOrderPaymentHandler(false), Orders.paid("m-1", "o-1", "1"));

        assertThat(rows("SELECT status FROM order_status")).containsExactly("PAID");
        assertThat(paymentEvents()).containsExactly("m-1 o-1 paid 1.00 applied");
    }

    /** The guard refuses a payment an order cannot take; the runtime acks it as rejected, after rolling back. */
    @Test
    void aPaymentForAnOrderInAnotherStateIsRejectedNamingTheStates() throws Exception {
        createTables();
        try (Statement statement = admin.createStatement()) {
            statement.execute("INSERT INTO order_status (order_id, status) VALUES ('o-1', 'CANCELLED')");
        }
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        assertThatThrownBy(() -> runAndCommit(handler, Orders.paid("m-1", "o-1", "5")))
                .isExactlyInstanceOf(RejectedException.class)
                .hasMessage("order_status order_id='o-1' is CANCELLED: event 'paid' applies only in [CREATED]"
                        + " (leading to PAID)");

        assertThat(rows("SELECT status FROM order_status")).containsExactly("CANCELLED");
        assertThat(paymentEvents()).isEmpty();
    }

    @Test
    void theWritesRollBackWithTheStoreTransaction() throws Exception {
        createTables();
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        try (Connection tx = transaction()) {
            handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context().withTransaction(tx));
            tx.rollback();
        }
        assertThat(paymentEvents()).as("nothing commits before the store does").isEmpty();
        assertThat(rows("SELECT order_id FROM order_status")).isEmpty();

        runAndCommit(handler, Orders.paid("m-1", "o-1", "5"));
        assertThat(paymentEvents()).containsExactly("m-1 o-1 paid 5.00 applied");
    }

    /** Runs that lose the race on order_status's key fail, roll back and are retried, as the runtime does. */
    @Test
    void concurrentFirstPaymentsOfOneOrderApplyItOnce() throws Exception {
        createTables();
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);
        int runs = 8;
        ExecutorService pool = Executors.newFixedThreadPool(runs);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        try {
            for (int i = 0; i < runs; i++) {
                TestMessage message = Orders.paid("m-" + i, "o-1", "9.99");
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int attempt = 1; ; attempt++) {
                        try {
                            runAndCommit(handler, message);
                            return null;
                        } catch (SQLException e) {
                            if (attempt == 20) {
                                throw e;
                            }
                        }
                    }
                }));
            }
            start.countDown();
            for (Future<?> future : futures) {
                future.get();
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(rows("SELECT outcome, COUNT(*) FROM payment_events GROUP BY outcome ORDER BY outcome"))
                .containsExactly("applied 1", "ignored-already-paid " + (runs - 1));
        assertThat(rows("SELECT COUNT(DISTINCT message_id) FROM payment_events")).containsExactly(String.valueOf(runs));
        assertThat(rows("SELECT order_id, status FROM order_status")).containsExactly("o-1 PAID");
    }

    @Test
    void withoutAStoreTransactionTheHandlerSaysHowToEnableTransactionalMode() {
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("pipeline 'orders' gives none")
                .hasMessageContaining("Set pipelines.orders.transactional: true with store.type: jdbc")
                .hasMessageContaining("or bind dev.idem.examples.orders.OrderPaymentHandler");
    }

    @Test
    void anAutoCommitConnectionIsRefused() throws Exception {
        createTables();
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context().withTransaction(admin)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("auto-commit mode");
        assertThat(paymentEvents()).isEmpty();
    }

    @Test
    void missingTablesFailWithTheDdlToRun() throws Exception {
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        try (Connection tx = transaction()) {
            assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context().withTransaction(tx)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("The tables [order_status, payment_events] of TransactionalOrderPaymentHandler"
                            + " are missing in H2")
                    .hasMessageContaining("CREATE TABLE IF NOT EXISTS order_status")
                    .hasMessageContaining("CREATE TABLE IF NOT EXISTS payment_events")
                    .hasMessageContaining("set pipelines.orders.handler-settings.create-tables: true");
            tx.rollback();
        }
    }

    @Test
    void oneMissingTableIsNamedAlone() throws Exception {
        try (Statement statement = admin.createStatement()) {
            statement.execute(OrderTables.ddl().get(0));
        }
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        try (Connection tx = transaction()) {
            assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context().withTransaction(tx)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("The tables [payment_events] ");
            tx.rollback();
        }
    }

    /**
     * H2, like MariaDB, commits the open transaction on CREATE TABLE, so creating the tables in the run would
     * commit the store's claim early. The handler refuses, and the transaction is left as it was.
     */
    @Test
    void whereDdlCommitsTheHandlerRefusesToCreateTablesEvenWhenAllowed() throws Exception {
        try (Statement statement = admin.createStatement()) {
            statement.execute("CREATE TABLE claims (id VARCHAR(16))");
        }
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler();
        handler.init(HandlerSettings.of("orders", Map.of("create-tables", "true")));

        try (Connection tx = transaction()) {
            try (Statement claim = tx.createStatement()) {
                claim.execute("INSERT INTO claims (id) VALUES ('m-1')");
            }
            assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context().withTransaction(tx)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("pipelines.orders.handler-settings.create-tables is true, but H2 commits"
                            + " the open transaction on CREATE TABLE")
                    .hasMessageContaining("CREATE TABLE IF NOT EXISTS order_status");
            tx.rollback();
        }

        assertThat(rows("SELECT id FROM claims")).as("the claim was not committed early").isEmpty();
        assertThat(rows("SELECT table_name FROM information_schema.tables WHERE table_name IN"
                + " ('ORDER_STATUS', 'PAYMENT_EVENTS')")).isEmpty();
    }

    @Test
    void aMalformedPayloadIsNonRetryableAndWritesNothing() throws Exception {
        createTables();
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler(false);

        try (Connection tx = transaction()) {
            assertThatThrownBy(() -> handler.handle(TestMessage.of("m-1", "{\"orderId\":\"o-1\",\"event\":\"paid\","
                    + "\"amount\":\"1,50\"}"), Orders.context().withTransaction(tx)))
                    .isInstanceOf(NonRetryableException.class)
                    .hasMessageContaining("amount \"1,50\" must be a positive decimal");
            tx.commit();
        }
        assertThat(paymentEvents()).isEmpty();
    }

    @Test
    void schemaSqlCanRunTwice() throws Exception {
        createTables();
        createTables();

        assertThat(OrderTables.ddl()).hasSize(2);
        assertThat(rows("SELECT COUNT(*) FROM information_schema.tables WHERE table_name IN"
                + " ('ORDER_STATUS', 'PAYMENT_EVENTS')")).containsExactly("2");
    }

    @Test
    void aCreateTablesSettingOtherThanTrueOrFalseFailsInitNamingTheSetting() {
        TransactionalOrderPaymentHandler handler = new TransactionalOrderPaymentHandler();

        assertThatThrownBy(() -> handler.init(HandlerSettings.of("orders", Map.of("create-tables", "yes"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value 'yes' for handler setting pipelines.orders.handler-settings.create-tables:"
                        + " must be true or false");
    }
}
