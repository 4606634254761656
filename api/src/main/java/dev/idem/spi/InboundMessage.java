package dev.idem.spi;

import java.util.Map;
import java.util.Objects;

/**
 * A message as a broker adapter received it. The payload array is owned by the message once
 * built: neither the adapter nor the runtime modifies it afterwards.
 *
 * @param source the topic or queue it was consumed from
 * @param partition the partition ({@code topic-3}) for brokers that have them, else {@code null}
 * @param key the message key (Kafka key, AMQP routing key, JMS group id), or {@code null}
 * @param headers headers or properties as text (binary values decoded as UTF-8); never {@code null}
 * @param payload the body; never {@code null}
 * @param brokerMessageId the broker's ID ({@code topic-partition-offset}, AMQP {@code message-id},
 *        {@code JMSMessageID}), or {@code null}
 * @param redelivered the broker's redelivered flag; informative only, decisions use the store
 * @param deliveryCount the broker's delivery count where it keeps one (1 = first), else 0
 * @param orderingKey the broker's own per-message ordering key, whose messages the broker keeps in
 *        order (the Kafka record key, the JMS {@code JMSXGroupID}), or {@code null} where the broker
 *        has none: an AMQP routing key names a route, not an order, and is never one. The runtime
 *        uses it as the default ordering key of {@code ordering: key}.
 * @param replyTo where the sender asked for a reply (a request message), or {@code null}; see {@link ReplyAddress}
 */
public record InboundMessage(String source, String partition, String key, Map<String, String> headers,
        byte[] payload, String brokerMessageId, boolean redelivered, int deliveryCount, String orderingKey,
        ReplyAddress replyTo) {

    public InboundMessage {
        Objects.requireNonNull(source, "source");
        headers = headers == null ? Map.of() : headers;
        Objects.requireNonNull(payload, "payload");
    }

    /** A message that asks for no reply. */
    public InboundMessage(String source, String partition, String key, Map<String, String> headers,
            byte[] payload, String brokerMessageId, boolean redelivered, int deliveryCount, String orderingKey) {
        this(source, partition, key, headers, payload, brokerMessageId, redelivered, deliveryCount, orderingKey, null);
    }

    /** A message whose {@code key} is also its ordering key (Kafka, JMS), or that has neither. */
    public InboundMessage(String source, String partition, String key, Map<String, String> headers,
            byte[] payload, String brokerMessageId, boolean redelivered, int deliveryCount) {
        this(source, partition, key, headers, payload, brokerMessageId, redelivered, deliveryCount, key);
    }
}
