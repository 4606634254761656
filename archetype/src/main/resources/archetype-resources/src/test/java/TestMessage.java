package ${package};

import dev.idem.api.Message;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;

/** A delivered message as the runtime hands it over: Message is plain data, so a record implements it. */
record TestMessage(String idempotencyKeyValue, String payloadText, int attempt) implements Message {

    static TestMessage of(String idempotencyKey, String payloadText) {
        return new TestMessage(idempotencyKey, payloadText, 1);
    }

    @Override
    public byte[] payload() {
        return payloadText.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public Map<String, String> headers() {
        return Map.of("message-id", idempotencyKeyValue);
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
        return null;
    }

    @Override
    public Optional<String> idempotencyKey() {
        return Optional.of(idempotencyKeyValue);
    }

    @Override
    public boolean redelivered() {
        return false;
    }
}
