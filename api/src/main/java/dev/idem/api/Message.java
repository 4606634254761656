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

    /**
     * The payload as {@code type}: {@code byte[]} gives {@link #payload()}, {@code String} its UTF-8 text, and any other
     * type an instance decoded from JSON with the runtime's Jackson, as for a {@link TypedHandler} under
     * {@code payload.format: json} (or by the handler's own {@link PayloadCodec}), whatever the pipeline's format
     * checked before the run. A {@link TypedHandler} gets its payload this way. The runtime's messages decode on every
     * call, except for the payload the run was given, which they return as it is.
     *
     * @param type the type wanted, such as a record of the handler's JAR
     * @return the payload as {@code type}; never {@code null}
     * @throws PayloadException if the payload does not decode into {@code type}: the runtime dead-letters the message
     *         as {@code invalid-payload} when the handler lets it propagate
     * @throws UnsupportedOperationException for another type on a message that cannot decode (a test double: implement
     *         this method in it, or call {@link TypedHandler#handle(Object, Message, HandlerContext)} directly)
     */
    default <T> T payloadAs(Class<T> type) {
        if (type == byte[].class) {
            return type.cast(payload());
        }
        if (type == String.class) {
            return type.cast(payloadAsString());
        }
        throw new UnsupportedOperationException("This message (" + getClass().getName() + ") cannot decode its payload"
                + " into " + type.getName() + ": only the runtime's messages decode. In a test, implement payloadAs in"
                + " the test double, or call the typed handle(payload, message, context) directly");
    }

    /**
     * The message headers (Kafka headers, AMQP headers, JMS properties); never {@code null}. Read-only: an adapter's
     * map may refuse changes (Kafka's does), and decode a header only when it is read.
     */
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

    /**
     * Where the sender asked for a reply, for a request message: the AMQP {@code reply_to}, the JMS
     * {@code JMSReplyTo}, the Kafka {@code kafka_replyTopic} header. Empty for a message that asks for none. A
     * handler answers with {@link HandlerContext#reply}.
     */
    default Optional<String> replyTo() {
        return Optional.empty();
    }
}
