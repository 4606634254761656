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
 */
public record InboundMessage(String source, String partition, String key, Map<String, String> headers,
        byte[] payload, String brokerMessageId, boolean redelivered, int deliveryCount) {

    public InboundMessage {
        Objects.requireNonNull(source, "source");
        headers = headers == null ? Map.of() : headers;
        Objects.requireNonNull(payload, "payload");
    }
}
