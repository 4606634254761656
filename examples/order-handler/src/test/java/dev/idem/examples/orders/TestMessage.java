package dev.idem.examples.orders;

import dev.idem.api.Message;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;

/** A delivered message as the runtime would hand it over, keyed by its {@code message-id} header. */
record TestMessage(String messageId, String payloadText) implements Message {

    static TestMessage paid(String messageId, String orderId, String amount) {
        return new TestMessage(messageId,
                "{\"orderId\":\"" + orderId + "\",\"event\":\"paid\",\"amount\":\"" + amount + "\"}");
    }

    @Override
    public byte[] payload() {
        return payloadText.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public Map<String, String> headers() {
        return Map.of("message-id", messageId);
    }

    @Override
    public String key() {
        return null;
    }

    @Override
    public String partition() {
        return null;
    }

    @Override
    public String source() {
        return "orders";
    }

    @Override
    public String brokerMessageId() {
        return "broker-" + messageId;
    }

    @Override
    public Optional<String> idempotencyKey() {
        return Optional.of(messageId);
    }

    @Override
    public int attempt() {
        return 1;
    }

    @Override
    public boolean redelivered() {
        return false;
    }
}
