package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.OutboundMessage;
import dev.idem.spi.OutboxStore.Emitted;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * What one handler run emits through {@code HandlerContext.send}, with deterministic IDs: the name-based
 * UUID of the namespace, the inbound idempotency key and the emit's ordinal in the run. Neither part holds
 * a line break (keys are free of control characters, namespaces are plain names), so the joined name is
 * unambiguous, and a re-run of the same message emits the same IDs. Used by the run's thread only.
 */
final class Emissions {

    private final String namespace;
    private final String key;
    private final String idHeader;
    /** The run's trace context headers, carried by what it emits unless the handler set its own. */
    private final Map<String, String> traceContext;
    private final List<Emitted> emitted = new ArrayList<>(2);

    Emissions(String namespace, String key, String idHeader, Map<String, String> traceContext) {
        this.namespace = namespace;
        this.key = key;
        this.idHeader = idHeader;
        this.traceContext = traceContext;
    }

    /** The ID of the emit with this ordinal (0 for a run's first). */
    static String idOf(String namespace, String key, int ordinal) {
        byte[] name = (namespace + "\n" + key + "\n" + ordinal).getBytes(StandardCharsets.UTF_8);
        return UUID.nameUUIDFromBytes(name).toString();
    }

    /**
     * The key of an outgoing call in {@code scope} ({@code HandlerContext.idempotencyKey}): a name-based UUID that
     * no emitted message's ID can equal, since its name starts with a line of its own and emitted IDs' names start
     * with the namespace, which holds no line break. Fixed forever: a change would make every re-run after an
     * upgrade call the other service under a new key.
     */
    static String callKeyOf(String namespace, String key, String scope) {
        byte[] name = ("idempotency-key\n" + namespace + "\n" + key + "\n" + scope).getBytes(StandardCharsets.UTF_8);
        return UUID.nameUUIDFromBytes(name).toString();
    }

    String send(String destination, String messageKey, byte[] payload, Map<String, String> headers) {
        Objects.requireNonNull(payload, "payload");
        if (destination == null || destination.isBlank()) {
            throw new IllegalArgumentException("send needs a destination (a topic, exchange or queue), got "
                    + (destination == null ? "null" : "'" + destination + "'"));
        }
        String id = idOf(namespace, key, emitted.size());
        Map<String, String> withId = new HashMap<>(traceContext);
        if (headers != null) {
            withId.putAll(headers);
        }
        withId.put(idHeader, id);
        emitted.add(new Emitted(destination, new OutboundMessage(id, messageKey, withId, payload)));
        return id;
    }

    /** What was emitted, in order; {@code null} if nothing. */
    List<Emitted> emitted() {
        return emitted.isEmpty() ? null : List.copyOf(emitted);
    }
}
