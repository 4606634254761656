package dev.idem.examples.orders;

import dev.idem.api.HandlerContext;
import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.Message;
import dev.idem.api.NonRetryableException;
import dev.idem.api.RejectedException;
import dev.idem.api.TypedHandler;
import dev.idem.api.guard.StateMachine;
import dev.idem.api.guard.Transition;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;

/**
 * Records order payments in the database of the JDBC dedup store, inside the store's own transaction,
 * so the payment and the message's claim commit together, exactly once, or not at all. For a pipeline
 * with {@code transactional: true} and {@code store.type: jdbc}.
 *
 * <p>Each run, in the transaction from {@code context.transaction(Connection.class)}:
 * <ol>
 *   <li>moves the order from {@code CREATED} to {@code PAID} in {@code order_status} with the
 *       {@link StateMachine} of {@code OrderStates}, in one conditional {@code UPDATE}: a second {@code paid}
 *       event for one order finds it {@code PAID} already and changes nothing; an order the table does not
 *       know yet is inserted as {@code PAID}; an order in any other state (say {@code CANCELLED}) is rejected;</li>
 *   <li>inserts one {@code payment_events} row: message ID, order, event, amount, and the outcome
 *       {@code applied} or {@code ignored-already-paid}.</li>
 * </ol>
 * The handler never commits, rolls back or closes the connection: the store does, after the run.
 * A failure anywhere rolls back the claim and both writes, and the runtime retries.
 *
 * <p><b>Tables.</b> {@code order_status} and {@code payment_events} must exist; {@code schema.sql} in the
 * JAR creates them. By default the handler only checks (through the database's metadata, which commits
 * nothing) and fails with the DDL when they are missing. With the handler setting {@value #CREATE_TABLES}
 * {@code true} (in the pipeline's {@code handler-settings}, read by {@link #init(HandlerSettings)}), the first
 * run creates them in its transaction, but only on a database whose DDL is transactional (PostgreSQL): on
 * MariaDB, MySQL and H2 a {@code CREATE TABLE} commits the open transaction, the dedup claim with it, and the
 * handler refuses. The database itself is the JDBC store's ({@code store.jdbc.url}); the handler has no
 * connection settings of its own.
 *
 * <p><b>Threads.</b> Thread-safe: each run works on its own transaction; two concurrent first payments
 * of one order race on {@code order_status}'s primary key, and the loser fails, rolls back and, retried,
 * finds the order paid.
 *
 * <p><b>Failures.</b> A payment for an order in a state that does not take one throws
 * {@link RejectedException}: the run ends as {@code rejected} (its transaction rolled back, the message acked,
 * not retried). A payload that is not an order event's JSON is dead-lettered by the runtime before the run
 * ({@code invalid-payload}); an event whose values do not fit throws {@link NonRetryableException}; a run without a store
 * transaction or with missing tables throws {@link IllegalStateException} saying what to configure;
 * database errors throw {@link SQLException} (retried). Statements time out at the run's deadline.
 */
public final class TransactionalOrderPaymentHandler implements TypedHandler<OrderEvent>, HandlerLifecycle {

    /** Handler setting: {@code true} lets the first run create missing tables (PostgreSQL only). */
    public static final String CREATE_TABLES = "create-tables";

    /*
     * Replaced at most once, by init, before the first run. Not volatile: the runtime calls init before the
     * pipeline's threads start, which makes it visible to every handle (HandlerLifecycle's contract).
     */
    private OrderTables tables;

    /** For the runtime, which then calls {@link #init(HandlerSettings)}; until then, tables are never created. */
    public TransactionalOrderPaymentHandler() {
        this(false);
    }

    /**
     * For binding in code and tests, without {@code init}.
     *
     * @param createTables whether a run may create missing tables in its transaction where DDL is transactional
     */
    public TransactionalOrderPaymentHandler(boolean createTables) {
        this.tables = new OrderTables(createTables);
    }

    /**
     * Reads {@value #CREATE_TABLES} (default {@code false}). Touches no database: the tables are checked on the
     * first run, in the store's transaction.
     *
     * @throws IllegalArgumentException naming the setting when it is neither true nor false
     */
    @Override
    public void init(HandlerSettings settings) {
        this.tables = new OrderTables(settings.getBoolean(CREATE_TABLES, false));
    }

    @Override
    public void handle(OrderEvent payload, Message message, HandlerContext context) throws SQLException {
        OrderEvent event = payload.validate();
        Connection connection = transaction(context);
        int timeoutSeconds = (int) Math.max(1, (context.remaining().toMillis() + 999) / 1000);
        tables.ensure(connection, context.pipeline());
        Outcome outcome = markPaid(connection, event, timeoutSeconds)
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
        return requireTransaction(context.transaction(Connection.class), context.pipeline());
    }

    /** The store's transaction, checked: present and not in auto-commit mode. */
    static Connection requireTransaction(java.util.Optional<Connection> transaction, String pipeline)
            throws SQLException {
        Connection connection = transaction.orElseThrow(() -> new IllegalStateException(
                TransactionalOrderPaymentHandler.class.getSimpleName() + " needs the dedup store's transaction, and"
                        + " pipeline '" + pipeline + "' gives none. Set pipelines." + pipeline
                        + ".transactional: true with store.type: jdbc, or bind " + OrderPaymentHandler.class.getName()
                        + " to this pipeline instead."));
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("The connection of pipeline '" + pipeline + "' is in"
                    + " auto-commit mode, so the payment would not commit with the message's claim; the JDBC store's"
                    + " transactional mode never does this: is the connection from another source?");
        }
        return connection;
    }

    /**
     * The guard: moves the order from CREATED to PAID, or finds it PAID already.
     *
     * @return whether this run paid the order
     * @throws RejectedException when the order is in another state
     */
    static boolean markPaid(Connection connection, OrderEvent event, int timeoutSeconds) throws SQLException {
        Transition paid = OrderStates.ORDERS.withQueryTimeout(Duration.ofSeconds(timeoutSeconds))
                .apply(connection, event.orderId(), event.event());
        if (paid.exists()) {
            return paid.orReject().applied();
        }
        // Unknown order: the first payment creates it. Of two concurrent first payments of the same order, one fails
        // here (a duplicate key, or on MariaDB a deadlock on the gap the guard's locking read took); that run rolls
        // back, and its retry finds the order paid.
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO order_status (order_id, status) VALUES (?, ?)")) {
            insert.setQueryTimeout(timeoutSeconds);
            insert.setString(1, event.orderId());
            insert.setString(2, OrderStates.PAID);
            insert.executeUpdate();
            return true;
        }
    }
}
