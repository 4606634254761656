package dev.idem.handlertest;

import dev.idem.api.HandlerContext;
import dev.idem.runtime.TypedPayloads;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The context of one handler run, for a unit test that calls {@code handle} directly with a {@link TestMessage}; a
 * {@link CrashTest} runs the real pipeline instead. Use one per message: its steps and its derived keys belong to the
 * message it is given with.
 *
 * <ul>
 *   <li>{@link #transaction(Class)} answers the transaction given to {@link #withTransaction(Object)} (a
 *       {@code java.sql.Connection} the test commits or rolls back), else nothing;</li>
 *   <li>{@code send} collects what the handler emits ({@link #sent()}), with IDs numbered per context;</li>
 *   <li>{@code step} runs each step's action once and returns its result to later calls of the same name on this
 *       context, as a later run of the message gets it from the store (nothing is encoded or bounded);</li>
 *   <li>{@code idempotencyKey(scope)} is a name-based UUID of the message's ID and the scope: stable, but not the key
 *       the runtime derives, which also depends on the pipeline's namespace.</li>
 *   <li>{@code reply} keeps the last reply ({@link #reply()}), encoded as {@code send} encodes; it does not check
 *       that the message asks for one (the runtime does, see {@code Message.replyTo()}).</li>
 * </ul>
 * Thread-safe.
 */
public final class TestContext implements HandlerContext {

    /** One message the handler emitted. */
    public record Sent(String destination, String key, String payload, Map<String, String> headers) {
    }

    private final String pipeline;
    private final String messageId;
    private final Object transaction;
    private final List<Sent> sent = new CopyOnWriteArrayList<>();
    private final Map<String, Object> steps = new HashMap<>();
    private volatile Sent reply;

    private TestContext(String pipeline, String messageId, Object transaction) {
        this.pipeline = pipeline;
        this.messageId = messageId;
        this.transaction = transaction;
    }

    /** A context for any message: its derived keys depend on the scope alone. */
    public static TestContext plain() {
        return new TestContext(CrashTest.PIPELINE, "", null);
    }

    /** The context of a run of {@code message}. */
    public static TestContext of(TestMessage message) {
        return new TestContext(CrashTest.PIPELINE, message.id(), null);
    }

    /** This context with the store's transaction, as transactional mode gives it. */
    public TestContext withTransaction(Object storeTransaction) {
        return new TestContext(pipeline, messageId, Objects.requireNonNull(storeTransaction, "storeTransaction"));
    }

    /** This context in the pipeline named so ({@value CrashTest#PIPELINE} by default), as the handler's messages name it. */
    public TestContext inPipeline(String name) {
        return new TestContext(Objects.requireNonNull(name, "name"), messageId, transaction);
    }

    /** What the handler emitted through this context, in order. */
    public List<Sent> sent() {
        return List.copyOf(sent);
    }

    @Override
    public String pipeline() {
        return pipeline;
    }

    @Override
    public System.Logger logger() {
        return System.getLogger("idem.handler." + pipeline);
    }

    @Override
    public Instant deadline() {
        return Instant.now().plus(remaining());
    }

    @Override
    public Duration remaining() {
        return Duration.ofSeconds(30);
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return type.isInstance(transaction) ? Optional.of(type.cast(transaction)) : Optional.empty();
    }

    @Override
    public String send(String destination, String key, byte[] payload, Map<String, String> headers) {
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(payload, "payload");
        sent.add(new Sent(destination, key, new String(payload, StandardCharsets.UTF_8),
                headers == null ? Map.of() : Map.copyOf(headers)));
        return messageId + "/" + sent.size();
    }

    /** Encodes {@code payload} as the runtime does ({@link TypedPayloads}; a {@code String} as its UTF-8 text), then sends it. */
    @Override
    public String send(String destination, String key, Object payload, Map<String, String> headers) {
        Objects.requireNonNull(payload, "payload");
        byte[] body = payload instanceof byte[] bytes ? bytes : payload instanceof String text
                ? text.getBytes(StandardCharsets.UTF_8) : TypedPayloads.encode(payload);
        return send(destination, key, body, headers);
    }

    /** What the handler replied last, as its destination would get it (destination and key {@code null}); or empty. */
    public Optional<Sent> reply() {
        return Optional.ofNullable(reply);
    }

    @Override
    public void reply(byte[] payload, Map<String, String> headers) {
        Objects.requireNonNull(payload, "payload");
        reply = new Sent(null, null, new String(payload, StandardCharsets.UTF_8),
                headers == null ? Map.of() : Map.copyOf(headers));
    }

    @Override
    public void reply(Object payload) {
        Objects.requireNonNull(payload, "payload");
        reply(payload instanceof byte[] bytes ? bytes : payload instanceof String text
                ? text.getBytes(StandardCharsets.UTF_8) : TypedPayloads.encode(payload), Map.of());
    }

    @Override
    public String idempotencyKey(String scope) {
        if (scope == null || scope.isBlank()) {
            throw new IllegalArgumentException("idempotencyKey needs a scope naming the call, such as \"charge\"");
        }
        return UUID.nameUUIDFromBytes((messageId + "\n" + scope).getBytes(StandardCharsets.UTF_8)).toString();
    }

    @Override
    public synchronized <T> T step(String name, Class<T> type, Callable<T> action) throws Exception {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("A step needs a name that is not blank");
        }
        if (steps.containsKey(name)) {
            return type.cast(steps.get(name));
        }
        T result = action.call();
        steps.put(name, result);
        return result;
    }
}
