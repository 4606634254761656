package dev.idem.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What the runtime gives a {@link BatchHandler} beside its messages: the pipeline, a logger, the deadline of the
 * batch's run, the store's transaction, each message's own {@link HandlerContext}, and a way to fail one message
 * without failing the rest.
 *
 * <p>Valid only during the {@link BatchHandler#handle} call it was passed to, and only on that thread.
 */
public interface BatchContext {

    /** The name of the pipeline running the handler; also the key namespace. */
    String pipeline();

    /** A logger named after the pipeline. */
    System.Logger logger();

    /** When this batch's run is interrupted as timed out ({@code handler-timeout} from its start). */
    Instant deadline();

    /** Time left until {@link #deadline()}; zero or negative once it has passed. */
    Duration remaining();

    /**
     * The dedup store's transaction in transactional mode: one for the whole batch, committed with every key of the
     * batch. Empty in plain mode, or when the store offers none of that type.
     */
    <T> Optional<T> transaction(Class<T> type);

    /**
     * The context of one message of the batch, for what is done per message: {@link HandlerContext#send} (emitted
     * IDs derived from that message's key), {@link HandlerContext#idempotencyKey}, {@link HandlerContext#step}.
     *
     * @throws IllegalArgumentException if {@code message} is not one of this batch's messages
     */
    HandlerContext of(Message message);

    /**
     * Reports that {@code message} failed, as if its handler had thrown {@code cause}, while the rest of the batch
     * succeeds: its key does not complete, and it follows the pipeline's usual rules (retried, then dead-lettered;
     * a {@link NonRetryableException} is not retried, a {@link RejectedException} is acked as rejected). The last
     * report of a message counts.
     *
     * <p>In transactional mode the batch's transaction holds the failed message's writes too: the runtime rolls the
     * transaction back once the handler returns and runs the batch again without the reported messages, so nothing
     * written for a failed message commits. Report failures before writing for the message where that can be
     * helped.
     *
     * @throws IllegalArgumentException if {@code message} is not one of this batch's messages
     * @throws NullPointerException if {@code cause} is {@code null}
     */
    void fail(Message message, Exception cause);
}
