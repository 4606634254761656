package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The console's key lookup under {@code store.key-digest}: the operator types the message's ID and finds the key the
 * runtime stored, its digest, on a real runtime (the in-memory broker, the Caffeine store).
 */
class ConsoleKeyDigestTest {

    @Test
    void lookupDigestsTheIdTypedAndShowsBoth() {
        InMemoryBroker broker = new InMemoryBroker();
        AtomicInteger handled = new AtomicInteger();
        IdemRuntime runtime = Idem.builder().configYaml("""
                broker: {type: memory}
                store: {type: caffeine, key-digest: sha256-128}
                pipelines:
                  orders: {source: orders}
                runtime: {summary-interval: 0s}
                """).broker("memory", broker).handler("orders", (m, c) -> handled.incrementAndGet()).start();
        try {
            String id = "550e8400-e29b-41d4-a716-446655440000";
            broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", id),
                    "x".getBytes(StandardCharsets.UTF_8)));
            ConsoleApi api = new ConsoleApi(runtime);
            await().atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(api.key("orders", id).get("state")));

            Map<String, Object> key = api.key("orders", id);
            assertThat(key).containsEntry("id", id).containsEntry("storedId", KeyDigest.SHA256_128.apply(id))
                    .containsEntry("storedId", "o6nh7ZcyyrKIaBJ74A8c6Q");
            assertThat(api.key("orders", "never")).containsEntry("state", "absent").containsEntry("id", "never");
            assertThat(handled).hasValue(1);
        } finally {
            runtime.stop(Duration.ofSeconds(5));
            broker.close();
        }
    }
}
