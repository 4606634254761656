package dev.idem.spi;

import java.time.Duration;

/**
 * One received message and the handle that settles it with the broker.
 *
 * <p>The runtime settles every delivery exactly once, through exactly one of {@link #ack},
 * {@link #retryLater} or {@link #deadLetter}, possibly from a thread other than the adapter's;
 * implementations are thread-safe and hand the call to their client's thread where the client
 * requires it. A delivery that is never settled (the process died, the subscription was closed)
 * must be redelivered by the broker.
 */
public interface Delivery {

    /** The message. */
    InboundMessage message();

    /**
     * The message is done: remove it from the broker. Called only after the key's completion has
     * been written to the store.
     *
     * @throws BrokerException if the broker refused or the connection is gone (the message will then
     *         come back and be recognised as a duplicate)
     */
    void ack();

    /**
     * Hand the message back to be delivered again, not before {@code delay} where the broker supports
     * delays. Never acknowledges it.
     *
     * @throws BrokerException if the broker could not be told (it will then redeliver on its own)
     */
    void retryLater(Duration delay);

    /**
     * Move the message to the dead-letter destination, then acknowledge it. The adapter acknowledges
     * only once the broker confirmed the dead-lettered copy.
     *
     * @throws BrokerException if the copy could not be confirmed; the original is then not acknowledged
     */
    void deadLetter(DeadLetterReason reason);
}
