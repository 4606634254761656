package dev.idem.runtime.internal.pipeline;

import dev.idem.api.Message;
import dev.idem.runtime.internal.payload.Payloads;
import dev.idem.spi.InboundMessage;
import java.util.Map;
import java.util.Optional;

/**
 * The handler's read-only view of an inbound message, with the key claimed for it, the run number and the payload as
 * the pipeline read it for this run.
 */
final class DeliveredMessage implements Message {

    private final InboundMessage inbound;
    private final String idempotencyKey;
    private final int attempt;
    /** What {@link Payloads#prepare} gave this run (a typed handler's payload), or {@code null}. */
    private final Object prepared;
    private final Payloads payloads;

    DeliveredMessage(InboundMessage inbound, String idempotencyKey, int attempt, Object prepared, Payloads payloads) {
        this.inbound = inbound;
        this.idempotencyKey = idempotencyKey;
        this.attempt = attempt;
        this.prepared = prepared;
        this.payloads = payloads;
    }

    @Override
    public byte[] payload() {
        return inbound.payload();
    }

    @Override
    public <T> T payloadAs(Class<T> type) {
        return payloads.as(inbound.payload(), prepared, type);
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
    public Optional<String> replyTo() {
        return inbound.replyTo() == null ? Optional.empty() : Optional.of(inbound.replyTo().destination());
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
