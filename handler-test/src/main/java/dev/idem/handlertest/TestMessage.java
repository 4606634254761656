package dev.idem.handlertest;

import dev.idem.api.Message;
import dev.idem.runtime.TypedPayloads;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One message of a test: in a {@link CrashTest}'s stream, what a producer sends (its {@link #id()} in the
 * {@code message-id} header, which is where the pipeline takes its idempotency key from by default); in a unit test
 * that calls a handler's {@code handle} directly, the {@link Message} the runtime would hand over on a first run: the
 * idempotency key is the ID, the attempt 1, the source {@value CrashTest#PIPELINE}.
 *
 * <p>Immutable; the payload is not copied and must not be changed.
 */
public final class TestMessage implements Message {

    private final String id;
    private final String key;
    private final Map<String, String> headers;
    private final byte[] payload;
    private final String replyTo;

    private TestMessage(String id, String key, Map<String, String> headers, byte[] payload) {
        this(id, key, headers, payload, null);
    }

    private TestMessage(String id, String key, Map<String, String> headers, byte[] payload, String replyTo) {
        this.id = Objects.requireNonNull(id, "id");
        this.key = key;
        this.replyTo = replyTo;
        Map<String, String> all = new LinkedHashMap<>(headers);
        all.put("message-id", id);
        this.headers = Map.copyOf(all);
        this.payload = Objects.requireNonNull(payload, "payload");
    }

    /** A message with this ID and this UTF-8 payload. */
    public static TestMessage of(String id, String payload) {
        return new TestMessage(id, null, Map.of(), Objects.requireNonNull(payload, "payload")
                .getBytes(StandardCharsets.UTF_8));
    }

    /** A message with this ID and these payload bytes. */
    public static TestMessage of(String id, byte[] payload) {
        return new TestMessage(id, null, Map.of(), payload);
    }

    /** This message with one more header. */
    public TestMessage withHeader(String name, String value) {
        Map<String, String> more = new LinkedHashMap<>(headers);
        more.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
        return new TestMessage(id, key, more, payload, replyTo);
    }

    /** This message with a broker message key (the pipeline orders by it under {@code ordering: key}). */
    public TestMessage withKey(String messageKey) {
        return new TestMessage(id, messageKey, headers, payload, replyTo);
    }

    /** This message as a request whose reply goes to {@code destination} ({@link #replyTo()}). */
    public TestMessage withReplyTo(String destination) {
        return new TestMessage(id, key, headers, payload, Objects.requireNonNull(destination, "destination"));
    }

    @Override
    public Optional<String> replyTo() {
        return Optional.ofNullable(replyTo);
    }

    /** The message's ID: its idempotency key under the default {@code id} settings, and how reports name it. */
    public String id() {
        return id;
    }

    @Override
    public byte[] payload() {
        return payload;
    }

    /**
     * The payload as {@code type}, decoded as a pipeline under {@code payload.format: json} decodes it
     * ({@link TypedPayloads}), so that a typed handler's {@code handle(message, context)} gets what the runtime would
     * give it, and a payload the runtime refuses throws the same {@code PayloadException}.
     */
    @Override
    public <T> T payloadAs(Class<T> type) {
        if (type == byte[].class || type == String.class) {
            return Message.super.payloadAs(type);
        }
        return TypedPayloads.decode(payload, type);
    }

    /** The headers, {@code message-id} (the ID) among them. */
    @Override
    public Map<String, String> headers() {
        return headers;
    }

    @Override
    public String key() {
        return key;
    }

    @Override
    public String partition() {
        return null;
    }

    @Override
    public String source() {
        return CrashTest.PIPELINE;
    }

    @Override
    public String brokerMessageId() {
        return id;
    }

    @Override
    public Optional<String> idempotencyKey() {
        return Optional.of(id);
    }

    @Override
    public int attempt() {
        return 1;
    }

    @Override
    public boolean redelivered() {
        return false;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TestMessage other && id.equals(other.id) && Objects.equals(key, other.key)
                && headers.equals(other.headers) && Arrays.equals(payload, other.payload);
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, key, headers) * 31 + Arrays.hashCode(payload);
    }

    @Override
    public String toString() {
        return "TestMessage[" + id + (key == null ? "" : ", key " + key) + ", " + payload.length + " bytes]";
    }
}
