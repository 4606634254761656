package dev.idem.api;

/**
 * The user's code: processes one message whose idempotency key the runtime has claimed.
 *
 * <p>Called by the runtime's pipeline worker threads. One instance serves every message of
 * the pipelines it is bound to, so an implementation must be thread-safe when the pipeline's
 * {@code concurrency} is above 1. Messages with the same key (or partition, depending on the
 * pipeline's {@code ordering}) are handed over one at a time, in order.
 *
 * <p>Returning normally means the message is done: the runtime completes the key in the
 * dedup store, then acknowledges the message. Throwing means it failed: the runtime retries
 * in-process with back-off while it holds the key, then dead-letters the message.
 * Throw {@link NonRetryableException} to skip the remaining retries. A handler that runs past
 * {@link HandlerContext#deadline()} is interrupted.
 *
 * <p>Implementations need a public no-arg constructor when they are named in configuration.
 */
@FunctionalInterface
public interface MessageHandler {

    /**
     * Processes one message.
     *
     * @param message the message, never {@code null}
     * @param context the pipeline, deadline, logger and store transaction of this run
     * @throws Exception any failure; the runtime retries, then dead-letters
     */
    void handle(Message message, HandlerContext context) throws Exception;
}
