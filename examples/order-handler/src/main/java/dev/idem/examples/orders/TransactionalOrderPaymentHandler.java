package dev.idem.examples.orders;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Records order payments in the database of the JDBC dedup store, inside the store's own transaction,
 * so the payment and the message's claim commit together, exactly once, or not at all. For a pipeline
 * with {@code transactional: true} and {@code store.type: jdbc}.
 *
 * <p>Each run, in the transaction from {@code context.transaction(Connection.class)}:
 * <ol>
 *   <li>moves the order to {@code PAID} in {@code order_status} unless it is there already
 *       (the state-machine guard: a second {@code paid} event for one order changes nothing);</li>
 *   <li>inserts one {@code payment_events} row: message ID, order, event, amount, and the outcome
 *       {@code applied} or {@code ignored-already-paid}.</li>
 * </ol>
 * The handler never commits, rolls back or closes the connection: the store does, after the run.
 * A failure anywhere rolls back the claim and both writes, and the runtime retries.
 *
 * <p><b>Tables.</b> {@code order_status} and {@code payment_events} must exist; {@code schema.sql} in the
 * JAR creates them. By default the handler only checks (through the database's metadata, which commits
 * nothing) and fails with the DDL when they are missing. With {@value #CREATE_TABLES_ENV} (or
 * {@value #CREATE_TABLES_PROPERTY}) {@code true}, the first run creates them in its transaction, but only
 * on a database whose DDL is transactional (PostgreSQL): on MariaDB, MySQL and H2 a {@code CREATE TABLE}
 * commits the open transaction, the dedup claim with it, and the handler refuses.
 *
 * <p><b>Threads.</b> Thread-safe: each run works on its own transaction; two concurrent first payments
 * of one order race on {@code order_status}'s primary key, and the loser fails, rolls back and, retried,
 * finds the order paid.
 *
 * <p><b>Failures.</b> A malformed payload throws {@link NonRetryableException}; a run without a store
 * transaction or with missing tables throws {@link IllegalStateException} saying what to configure;
 * database errors throw {@link SQLException} (retried). Statements time out at the run's deadline.
 */
public final class TransactionalOrderPaymentHandler implements MessageHandler {

    /** Environment variable: {@code true} lets the first run create missing tables (PostgreSQL only). */
    public static final String CREATE_TABLES_ENV = "IDEM_ORDER_CREATE_TABLES";
    /** System property read when {@value #CREATE_TABLES_ENV} is unset. */
    public static final String CREATE_TABLES_PROPERTY = "idem.order.create-tables";

    private static final String PAID = "PAID";

    private final OrderTables tables;

    /**
     * Reads {@value #CREATE_TABLES_ENV} (or {@value #CREATE_TABLES_PROPERTY}); the runtime calls this for
     * {@code handler:} in {@code conf/idem.yaml}.
     *
     * @throws IllegalArgumentException when the setting is neither true nor false
     */
    public TransactionalOrderPaymentHandler() {
        this(Settings.system().flag(CREATE_TABLES_ENV, CREATE_TABLES_PROPERTY));
    }

    /**
     * For binding in code and tests.
     *
     * @param createTables whether a run may create missing tables in its transaction where DDL is transactional
     */
    public TransactionalOrderPaymentHandler(boolean createTables) {
        this.tables = new OrderTables(createTables);
    }

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException {
        OrderEvent event = OrderEvent.parse(message.payloadAsString());
        Connection connection = transaction(context);
        int timeoutSeconds = (int) Math.max(1, (context.remaining().toMillis() + 999) / 1000);
        tables.ensure(connection);
        Outcome outcome = markPaid(connection, event.orderId(), timeoutSeconds)
                ? Outcome.APPLIED : Outcome.IGNORED_ALREADY_PAID;
        String messageId = MessageIds.of(message);
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO payment_events"
                + " (message_id, order_id, event, amount, outcome) VALUES (?, ?, ?, ?, ?)")) {
            insert.setQueryTimeout(timeoutSeconds);
            insert.setString(1, messageId);
            insert.setString(2, event.orderId());
            insert.setString(3, event.event());
            insert.setBigDecimal(4, event.amountValue());
            insert.setString(5, outcome.label());
            insert.executeUpdate();
        }
        context.logger().log(outcome == Outcome.APPLIED ? Level.DEBUG : Level.INFO,
                "Order {0}: payment of {1} from message {2} {3}", event.orderId(), event.amount(), messageId,
                outcome.label());
    }

    private static Connection transaction(HandlerContext context) throws SQLException {
        Connection connection = context.transaction(Connection.class).orElseThrow(() -> new IllegalStateException(
                TransactionalOrderPaymentHandler.class.getSimpleName() + " needs the dedup store's transaction, and"
                        + " pipeline '" + context.pipeline() + "' gives none. Set pipelines." + context.pipeline()
                        + ".transactional: true with store.type: jdbc, or bind " + OrderPaymentHandler.class.getName()
                        + " to this pipeline instead."));
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("The connection of pipeline '" + context.pipeline() + "' is in"
                    + " auto-commit mode, so the payment would not commit with the message's claim; the JDBC store's"
                    + " transactional mode never does this: is the connection from another source?");
        }
        return connection;
    }

    /**
     * The guard: moves the order to PAID unless it is there already.
     *
     * @return whether this run paid the order
     */
    private static boolean markPaid(Connection connection, String orderId, int timeoutSeconds) throws SQLException {
        try (PreparedStatement update = connection.prepareStatement(
                "UPDATE order_status SET status = ? WHERE order_id = ? AND status <> ?")) {
            update.setQueryTimeout(timeoutSeconds);
            update.setString(1, PAID);
            update.setString(2, orderId);
            update.setString(3, PAID);
            if (update.executeUpdate() == 1) {
                return true;
            }
        }
        try (PreparedStatement select = connection.prepareStatement(
                "SELECT status FROM order_status WHERE order_id = ?")) {
            select.setQueryTimeout(timeoutSeconds);
            select.setString(1, orderId);
            try (ResultSet row = select.executeQuery()) {
                if (row.next()) {
                    return false;
                }
            }
        }
        // Unknown order: the first payment creates it. A concurrent first payment of the same order makes this
        // fail on the primary key; that run rolls back, and its retry finds the order paid.
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO order_status (order_id, status) VALUES (?, ?)")) {
            insert.setQueryTimeout(timeoutSeconds);
            insert.setString(1, orderId);
            insert.setString(2, PAID);
            insert.executeUpdate();
            return true;
        }
    }
}
