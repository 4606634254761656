package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/** Conversions between AMQP messages and the SPI's records. Stateless. */
final class Messages {

    static final String MESSAGE_ID_HEADER = "message-id";
    static final String DELIVERY_COUNT_HEADER = "x-delivery-count";
    private static final int PERSISTENT = 2;

    private Messages() {
    }

    static InboundMessage inbound(String queue, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
        Map<String, Object> amqpHeaders = props.getHeaders();
        Map<String, String> headers = new HashMap<>(amqpHeaders == null ? 4 : amqpHeaders.size() * 2);
        if (amqpHeaders != null) {
            for (Map.Entry<String, Object> e : amqpHeaders.entrySet()) {
                if (e.getValue() != null) {
                    headers.put(e.getKey(), text(e.getValue()));
                }
            }
        }
        String messageId = props.getMessageId();
        if (messageId != null) {
            headers.putIfAbsent(MESSAGE_ID_HEADER, messageId);
        }
        String key = headers.getOrDefault(RabbitMqAdapterProvider.KEY_HEADER, envelope.getRoutingKey());
        // The routing key names a route, not an order: RabbitMQ has no per-message ordering key.
        String replyTo = props.getReplyTo();
        ReplyAddress reply = replyTo == null || replyTo.isBlank() ? null
                : ReplyAddress.of(replyTo, props.getCorrelationId());
        return new InboundMessage(queue, null, key, Collections.unmodifiableMap(headers), body, messageId,
                envelope.isRedeliver(), deliveryCount(amqpHeaders), null, reply);
    }

    /** {@code x-delivery-count} counts earlier deliveries (quorum queues set it from the first redelivery). */
    private static int deliveryCount(Map<String, Object> headers) {
        Object count = headers == null ? null : headers.get(DELIVERY_COUNT_HEADER);
        if (count instanceof Number n) {
            return (int) Math.min(Integer.MAX_VALUE - 1, n.longValue()) + 1;
        }
        return 0;
    }

    private static String text(Object value) {
        if (value instanceof LongString s) {
            return new String(s.getBytes(), StandardCharsets.UTF_8);
        }
        if (value instanceof byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
        return String.valueOf(value);
    }

    /**
     * An outbound message's properties: persistent, its message ID, its headers; a reply's correlation ID
     * ({@link ReplyAddress#CORRELATION_ID_HEADER}) becomes the {@code correlation_id} property.
     */
    static AMQP.BasicProperties outbound(OutboundMessage message) {
        Map<String, Object> headers = new LinkedHashMap<>(message.headers());
        if (message.key() != null) {
            headers.put(RabbitMqAdapterProvider.KEY_HEADER, message.key());
        }
        Object correlation = headers.remove(ReplyAddress.CORRELATION_ID_HEADER);
        String messageId = message.messageId() != null ? message.messageId()
                : message.headers().getOrDefault(MESSAGE_ID_HEADER, UUID.randomUUID().toString());
        return new AMQP.BasicProperties.Builder()
                .deliveryMode(PERSISTENT)
                .messageId(messageId)
                .correlationId(correlation == null ? null : new String(
                        ReplyAddress.correlationFromHeader(correlation.toString()), StandardCharsets.UTF_8))
                .headers(headers)
                .build();
    }

    /** The original's properties and headers, plus the reason and the origin; persistent. */
    static AMQP.BasicProperties deadLetter(AMQP.BasicProperties original, String queue, DeadLetterReason reason) {
        Map<String, Object> headers = original.getHeaders() == null
                ? new LinkedHashMap<>() : new LinkedHashMap<>(original.getHeaders());
        headers.putAll(reason.toHeaders());
        headers.put(DeadLetterReason.ORIGIN_SOURCE, queue);
        if (original.getMessageId() != null) {
            headers.put(DeadLetterReason.ORIGIN_MESSAGE_ID, original.getMessageId());
        }
        // An expiration the original carried must not silently drop the dead letter.
        return original.builder().headers(headers).deliveryMode(PERSISTENT).expiration(null).build();
    }
}
