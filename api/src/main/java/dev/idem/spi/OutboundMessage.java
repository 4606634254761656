package dev.idem.spi;

import java.util.Map;
import java.util.Objects;

/**
 * A message to publish through {@link BrokerAdapter#publish}.
 *
 * @param messageId the broker message ID to set where the broker lets the sender choose it, or {@code null}
 * @param key the message key (Kafka key, AMQP routing key), or {@code null}
 * @param headers headers or properties; never {@code null}
 * @param payload the body; never {@code null}
 */
public record OutboundMessage(String messageId, String key, Map<String, String> headers, byte[] payload) {

    public OutboundMessage {
        headers = headers == null ? Map.of() : Map.copyOf(headers);
        Objects.requireNonNull(payload, "payload");
    }
}
