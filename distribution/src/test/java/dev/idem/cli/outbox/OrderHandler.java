package dev.idem.cli.outbox;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;

/**
 * Pipeline A of {@code OutboxIT}: takes an order ({@code {"orderId": ...}}) and emits one {@code payment-requested}
 * for it to the topic {@value #PAYMENTS_ENV}, keyed by the order ID, through {@link HandlerContext#send}. In
 * transactional mode ({@value #TABLE_ENV} set) it first inserts {@code (order_id, pid)} into that table through the
 * store's {@link Connection}: the business transaction that the key and the outbox row commit with. Last, it appends
 * {@code orderId<TAB>attempt<TAB>pid<TAB>millis} to {@code runs-<pid>.log} and {@code orderId<TAB>paymentId<TAB>pid
 * <TAB>millis} to {@code sent-<pid>.log} in {@value #RUNS_DIR_ENV}: every run, including those whose transaction
 * rolled back or whose emit a crash re-sends. Packed by the test into {@code handlers/}; JDK and {@code idem-api}
 * only. Thread-safe.
 */
public final class OrderHandler implements MessageHandler {

    /** The topic the payments go to. */
    public static final String PAYMENTS_ENV = "IDEM_OUTBOX_PAYMENTS_TOPIC";
    /** The business table {@code (order_id, pid)} of transactional mode; unset in plain mode. */
    public static final String TABLE_ENV = "IDEM_OUTBOX_ORDERS_TABLE";
    /** The directory of this handler's run logs. */
    public static final String RUNS_DIR_ENV = "IDEM_OUTBOX_ORDER_RUNS_DIR";

    private final String payments = RunLog.env(PAYMENTS_ENV, null);
    private final String table = RunLog.env(TABLE_ENV, null);
    private final RunLog runs = new RunLog(RUNS_DIR_ENV, "runs");
    private final RunLog sent = new RunLog(RUNS_DIR_ENV, "sent");

    public OrderHandler() {
        if (payments == null) {
            throw new IllegalStateException(OrderHandler.class.getName() + " needs the environment variable "
                    + PAYMENTS_ENV);
        }
    }

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException {
        String orderId = RunLog.jsonField(message.payload(), "orderId");
        if (table != null) {
            Connection connection = context.transaction(Connection.class).orElseThrow(() -> new IllegalStateException(
                    "Pipeline '" + context.pipeline() + "' gives no store transaction, but " + TABLE_ENV + " is set"));
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO " + table + " (order_id, pid) VALUES (?, ?)")) {
                insert.setString(1, orderId);
                insert.setLong(2, runs.pid());
                insert.executeUpdate();
            }
        }
        String payment = "{\"orderId\":\"" + orderId + "\",\"event\":\"payment-requested\",\"amount\":\"10.00\"}";
        String paymentId = context.send(payments, orderId, payment.getBytes(StandardCharsets.UTF_8),
                Map.of("event", "payment-requested"));
        runs.append(orderId, Integer.toString(message.attempt()));
        sent.append(orderId, paymentId);
    }
}
