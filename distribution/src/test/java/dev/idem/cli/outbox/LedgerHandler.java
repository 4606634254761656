package dev.idem.cli.outbox;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * Pipeline B of {@code OutboxIT}: takes a {@code payment-requested} and books one ledger row for its order. In
 * transactional mode ({@value #TABLE_ENV} set) the row is {@code (order_id, payment_id, pid)} inserted into that
 * table (an auto id, no unique constraint on the order: duplicates must show, not be hidden) through the store's
 * {@link Connection}, committing with the payment's key or not at all. Last, it appends
 * {@code orderId<TAB>attempt<TAB>pid<TAB>millis} to {@code runs-<pid>.log} in {@value #RUNS_DIR_ENV} (the directory
 * {@code FaultHistory} reads): in plain mode that line is the ledger row, in transactional mode a run whose row may
 * have rolled back. Packed by the test into {@code handlers/}; JDK and {@code idem-api} only. Thread-safe.
 */
public final class LedgerHandler implements MessageHandler {

    /** The ledger table of transactional mode; unset in plain mode. */
    public static final String TABLE_ENV = "IDEM_OUTBOX_LEDGER_TABLE";
    /** The runs directory, shared with {@code FaultHandler} (the cluster's runs directory). */
    public static final String RUNS_DIR_ENV = "IDEM_FAULT_RUNS_DIR";

    private final String table = RunLog.env(TABLE_ENV, null);
    private final RunLog runs = new RunLog(RUNS_DIR_ENV, "runs");

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException {
        String paymentId = message.idempotencyKey()
                .orElseThrow(() -> new NonRetryableException("LedgerHandler needs an idempotency key"));
        String orderId = RunLog.jsonField(message.payload(), "orderId");
        if (table != null) {
            Connection connection = context.transaction(Connection.class).orElseThrow(() -> new IllegalStateException(
                    "Pipeline '" + context.pipeline() + "' gives no store transaction, but " + TABLE_ENV + " is set"));
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO " + table + " (order_id, payment_id, pid) VALUES (?, ?, ?)")) {
                insert.setString(1, orderId);
                insert.setString(2, paymentId);
                insert.setLong(3, runs.pid());
                insert.executeUpdate();
            }
        }
        runs.append(orderId, Integer.toString(message.attempt()));
    }
}
