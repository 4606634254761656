package dev.idem.examples.orders;

import dev.idem.api.BatchContext;
import dev.idem.api.BatchHandler;
import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.Message;
import dev.idem.api.NonRetryableException;
import dev.idem.api.RejectedException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * {@link TransactionalOrderPaymentHandler} for a batch of messages at once: one database transaction for the whole
 * batch (the runtime's, with every message's claim in it), each order moved to {@code PAID} as there, and the
 * batch's {@code payment_events} rows written in one JDBC batch statement, one round trip instead of one per
 * message. For a pipeline with {@code transactional: true}, {@code store.type: jdbc} and {@code payload.format: json};
 * its {@code batch.size} bounds the batch.
 *
 * <p>A message whose event does not fit ({@link NonRetryableException}) or whose order is in a state that takes no
 * payment ({@link RejectedException}) is reported through {@link BatchContext#fail}: the runtime rolls the
 * transaction back and runs the rest of the batch again without it, then settles it as its exception says (dead
 * letter, or acked as rejected). Any other failure fails the whole batch, which the runtime splits to find the
 * message that fails.
 *
 * <p>Thread-safe as {@link TransactionalOrderPaymentHandler} is: each batch works on its own transaction.
 */
public final class BatchOrderPaymentHandler implements BatchHandler, HandlerLifecycle {

    private OrderTables tables = new OrderTables(false);

    /**
     * Reads {@value TransactionalOrderPaymentHandler#CREATE_TABLES} (default {@code false}), as
     * {@link TransactionalOrderPaymentHandler} does.
     */
    @Override
    public void init(HandlerSettings settings) {
        this.tables = new OrderTables(settings.getBoolean(TransactionalOrderPaymentHandler.CREATE_TABLES, false));
    }

    @Override
    public void handle(List<Message> messages, BatchContext context) throws SQLException {
        Connection connection = TransactionalOrderPaymentHandler.requireTransaction(
                context.transaction(Connection.class), context.pipeline());
        int timeoutSeconds = (int) Math.max(1, (context.remaining().toMillis() + 999) / 1000);
        tables.ensure(connection, context.pipeline());
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO payment_events"
                + " (message_id, order_id, event, amount, outcome) VALUES (?, ?, ?, ?, ?)")) {
            insert.setQueryTimeout(timeoutSeconds);
            int rows = 0;
            for (Message message : messages) {
                OrderEvent event;
                Outcome outcome;
                try {
                    event = message.payloadAs(OrderEvent.class).validate();
                    outcome = TransactionalOrderPaymentHandler.markPaid(connection, event, timeoutSeconds)
                            ? Outcome.APPLIED : Outcome.IGNORED_ALREADY_PAID;
                } catch (NonRetryableException | RejectedException e) {
                    context.fail(message, e);
                    continue;
                }
                insert.setString(1, MessageIds.of(message));
                insert.setString(2, event.orderId());
                insert.setString(3, event.event());
                insert.setBigDecimal(4, event.amountValue());
                insert.setString(5, outcome.label());
                insert.addBatch();
                rows++;
            }
            if (rows > 0) {
                insert.executeBatch();
            }
        }
    }
}
