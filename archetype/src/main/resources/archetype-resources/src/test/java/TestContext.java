package ${package};

import dev.idem.api.HandlerContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A run's context that records what the handler emits. It offers no store transaction; for a transactional
 * handler, return a JDBC connection with auto-commit off from transaction(Connection.class), then commit or roll
 * back as the store would.
 */
final class TestContext implements HandlerContext {

    /** One message the handler emitted. */
    record Sent(String destination, String key, String payload, Map<String, String> headers) {
    }

    final List<Sent> sent = new ArrayList<>();

    @Override
    public String pipeline() {
        return "orders";
    }

    @Override
    public System.Logger logger() {
        return System.getLogger("idem.pipeline.orders");
    }

    @Override
    public Instant deadline() {
        return Instant.now().plusSeconds(30);
    }

    @Override
    public Duration remaining() {
        return Duration.ofSeconds(30);
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return Optional.empty();
    }

    @Override
    public String send(String destination, String key, byte[] payload, Map<String, String> headers) {
        sent.add(new Sent(destination, key, new String(payload, StandardCharsets.UTF_8), headers));
        return "emitted-" + sent.size();
    }
}
