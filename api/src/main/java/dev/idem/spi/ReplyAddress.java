package dev.idem.spi;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;

/**
 * Where the reply to a request message goes, as its sender asked: the AMQP {@code reply_to} and
 * {@code correlation_id}, the JMS {@code JMSReplyTo} and {@code JMSCorrelationID}, or on Kafka the
 * {@code kafka_replyTopic} and {@code kafka_correlationId} headers of Spring Kafka's {@code ReplyingKafkaTemplate}.
 * A broker adapter reads it from the message into {@link InboundMessage#replyTo()}.
 *
 * <p>The runtime sends the reply with {@link BrokerAdapter#publish} to {@link #destination()}, the correlation ID in
 * the header {@value #CORRELATION_ID_HEADER} as Base64 of its bytes ({@link #correlationHeader()}): an adapter that
 * reads reply addresses sets its broker's own correlation field from that header on publish, and sends the header no
 * further. Immutable.
 *
 * @param destination the queue or topic to reply to, as the adapter's {@code publish} names destinations; not blank
 * @param correlationId the request's correlation ID as the broker carried it (Spring Kafka's are 16 bytes of a UUID);
 *        empty when the request had none
 */
public record ReplyAddress(String destination, byte[] correlationId) {

    /** The header of an outbound message that carries the correlation ID to set, Base64-encoded. */
    public static final String CORRELATION_ID_HEADER = "idem-correlation-id";

    public ReplyAddress {
        Objects.requireNonNull(destination, "destination");
        if (destination.isBlank()) {
            throw new IllegalArgumentException("A reply destination must not be blank");
        }
        correlationId = correlationId == null ? new byte[0] : correlationId.clone();
    }

    /** A reply address whose correlation ID is text (AMQP, JMS), or {@code null} for none. */
    public static ReplyAddress of(String destination, String correlationId) {
        return new ReplyAddress(destination,
                correlationId == null ? null : correlationId.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public byte[] correlationId() {
        return correlationId.clone();
    }

    /** The value of {@value #CORRELATION_ID_HEADER} for the reply: Base64 of the correlation ID's bytes. */
    public String correlationHeader() {
        return Base64.getEncoder().encodeToString(correlationId);
    }

    /** The correlation ID's bytes from a {@value #CORRELATION_ID_HEADER} value. */
    public static byte[] correlationFromHeader(String header) {
        return Base64.getDecoder().decode(header);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ReplyAddress other && other.destination.equals(destination)
                && Arrays.equals(other.correlationId, correlationId);
    }

    @Override
    public int hashCode() {
        return destination.hashCode() * 31 + Arrays.hashCode(correlationId);
    }

    @Override
    public String toString() {
        return "ReplyAddress[destination=" + destination + ", correlationId=" + correlationHeader() + "]";
    }
}
