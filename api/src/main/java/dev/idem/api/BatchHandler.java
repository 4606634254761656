package dev.idem.api;

import java.util.List;

/**
 * A handler that takes messages in batches: one call for up to the pipeline's {@code batch.size} messages, gathered
 * for at most {@code batch.linger}. Every message of a batch is claimed for this run: none is a duplicate, none is a
 * message another consumer is running, and no two share an ordering key, so per-key order holds as for single
 * messages (a key's next message comes in a later batch, after this one's has completed).
 *
 * <pre>{@code
 * public final class OrderBatchHandler implements BatchHandler {
 *     public void handle(List<Message> messages, BatchContext context) throws Exception {
 *         Connection connection = context.transaction(Connection.class).orElseThrow();
 *         try (PreparedStatement insert = connection.prepareStatement("insert into orders values (?, ?)")) {
 *             for (Message message : messages) {
 *                 OrderPlaced order = message.payloadAs(OrderPlaced.class);
 *                 ...
 *                 insert.addBatch();
 *             }
 *             insert.executeBatch();
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p><b>Completion.</b> Returning normally means every message of the batch is done, except those reported through
 * {@link BatchContext#fail}. In plain mode their keys then complete together and the messages are acked; in
 * transactional mode ({@code transactional: true}) the batch runs in one database transaction, which records every
 * key of the batch as completed and commits with the handler's writes.
 *
 * <p><b>Failures.</b> A batch whose handler throws is not retried as a whole: the runtime splits it in halves and runs
 * each again, down to single messages, so the messages that fail are found and the others complete once. A message
 * that fails alone follows the pipeline's usual rules: {@code retry.*}, then the dead-letter destination, and
 * {@code max-deliveries} for a message that takes its consumer down. In plain mode a split runs the other messages of
 * the failed batch again (their effects outside the store may happen twice, as with any retry in plain mode); in
 * transactional mode the failed batch's transaction was rolled back, so nothing of it committed.
 *
 * <p>A message whose payload does not read as the pipeline's {@code payload.*} say is dead-lettered as
 * {@code invalid-payload} before the batch runs, and is not in it.
 *
 * <p>The contract of {@link MessageHandler} holds: thread-safe (several workers may each run a batch), one instance
 * per pipeline, interrupted past {@link BatchContext#deadline()}. A batch handler is also a {@link MessageHandler}:
 * wherever a single message is handed to it (a message that runs alone, or a test), it gets a batch of one.
 */
@FunctionalInterface
public interface BatchHandler extends MessageHandler {

    /**
     * Processes a batch.
     *
     * @param messages the batch, at least one message, in the order the runtime took them; unmodifiable
     * @param context the pipeline, deadline, logger and store transaction of this run, and each message's own
     *        context ({@link BatchContext#of})
     * @throws Exception any failure of the batch as a whole; the runtime splits it to find the failing messages
     */
    void handle(List<Message> messages, BatchContext context) throws Exception;

    /** Runs {@code message} as a batch of one. */
    @Override
    default void handle(Message message, HandlerContext context) throws Exception {
        SingleMessageBatch single = new SingleMessageBatch(message, context);
        handle(List.of(message), single);
        single.rethrowReported();
    }
}
