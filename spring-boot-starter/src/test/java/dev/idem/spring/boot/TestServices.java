package dev.idem.spring.boot;

import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.ExternalService;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.springframework.test.context.DynamicPropertyRegistry;

/** The real services the starter's tests use, located as the other suites locate them. */
final class TestServices {

    private TestServices() {
    }

    /** PostgreSQL as the application's {@code spring.datasource.*}. */
    static void postgres(DynamicPropertyRegistry registry) {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test",
                "Start one with trust authentication for user postgres and a database 'test'.", null);
        registry.add("spring.datasource.url", () -> url);
        if (!url.contains("user=")) {
            registry.add("spring.datasource.username", () -> "postgres");
        }
    }

    static String redis() {
        return ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start one with: redis-server --daemonize yes --port 6379 --save \"\" --appendonly no", null);
    }

    static void publish(InMemoryBroker broker, String queue, String id, String payload) {
        broker.publish(queue, new OutboundMessage(null, null, Map.of("message-id", id),
                payload.getBytes(StandardCharsets.UTF_8)));
    }
}
