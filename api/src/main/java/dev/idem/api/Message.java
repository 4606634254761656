package dev.idem.api;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;

/**
 * A read-only view of one delivered message, as a handler sees it.
 *
 * <p>Instances are created by the runtime, are immutable and may be read from any thread.
 * {@link #payload()} returns the runtime's own array for speed: do not modify it.
 */
public interface Message {

    /** The payload bytes; never {@code null}, possibly empty. Must not be modified. */
    byte[] payload();

    /** The payload decoded as UTF-8. */
    default String payloadAsString() {
        return new String(payload(), StandardCharsets.UTF_8);
    }

    /** The message headers (Kafka headers, AMQP headers, JMS properties); never {@code null}. */
    Map<String, String> headers();

    /** One header, if present. */
    default Optional<String> header(String name) {
        return Optional.ofNullable(headers().get(name));
    }

    /** The message key (Kafka record key, AMQP routing key, JMS group id), or {@code null}. */
    String key();

    /** The partition the message came from ({@code topic-3}), or {@code null} where the broker has none. */
    String partition();

    /** The topic or queue the message was consumed from. */
    String source();

    /** The broker's own message ID, or {@code null} when the broker gave none. */
    String brokerMessageId();

    /**
     * The idempotency key the runtime claimed for this message (without the pipeline namespace);
     * empty when the message is processed unprotected because it carried no usable key.
     */
    Optional<String> idempotencyKey();

    /**
     * Which run of the handler this is for the message, starting at 1: counts in-process
     * retries and runs by earlier consumers that did not complete (their lease ran out).
     */
    int attempt();

    /** Whether the broker flagged the message as delivered before. Informative only. */
    boolean redelivered();
}
