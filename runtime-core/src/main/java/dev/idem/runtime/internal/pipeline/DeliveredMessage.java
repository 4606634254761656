package dev.idem.runtime.internal.pipeline;

import dev.idem.api.Message;
import dev.idem.spi.InboundMessage;
import java.util.Map;
import java.util.Optional;

/** The handler's read-only view of an inbound message, with the key claimed for it and the run number. */
final class DeliveredMessage implements Message {

    private final InboundMessage inbound;
    private final String idempotencyKey;
    private final int attempt;

    DeliveredMessage(InboundMessage inbound, String idempotencyKey, int attempt) {
        this.inbound = inbound;
        this.idempotencyKey = idempotencyKey;
        this.attempt = attempt;
    }

    @Override
    public byte[] payload() {
        return inbound.payload();
    }

    @Override
    public Map<String, String> headers() {
        return inbound.headers();
    }

    @Override
    public String key() {
        return inbound.key();
    }

    @Override
    public String partition() {
        return inbound.partition();
    }

    @Override
    public String source() {
        return inbound.source();
    }

    @Override
    public String brokerMessageId() {
        return inbound.brokerMessageId();
    }

    @Override
    public Optional<String> idempotencyKey() {
        return Optional.ofNullable(idempotencyKey);
    }

    @Override
    public int attempt() {
        return attempt;
    }

    @Override
    public boolean redelivered() {
        return inbound.redelivered();
    }

    @Override
    public String toString() {
        return "Message[source=" + inbound.source() + ", key=" + idempotencyKey + ", brokerId="
                + inbound.brokerMessageId() + ", attempt=" + attempt + "]";
    }
}
