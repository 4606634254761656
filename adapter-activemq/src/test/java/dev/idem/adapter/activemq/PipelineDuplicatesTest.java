package dev.idem.adapter.activemq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.OutboundMessage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The whole runtime on ActiveMQ with the Caffeine store: a repeated message-id runs its handler once. */
class PipelineDuplicatesTest {

    static final int MESSAGES = 2_000;

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void repeatedMessageIdsRunTheHandlerOncePerUniqueId() throws Exception {
        String queue = "dups-" + UUID.randomUUID().toString().substring(0, 8);
        BrokerAdapter adapter = TestBroker.adapter(TestBroker.shared().config().with("consumers", 2));
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        int unique = 0;
        for (int i = 0; i < MESSAGES; i++) {
            // Every fifth message repeats the id of the one before it: 20 % duplicates.
            boolean repeat = i % 5 == 4;
            String id = "order-" + (repeat ? unique - 1 : unique++);
            adapter.publish(queue, new OutboundMessage(null, null, Map.of("message-id", id),
                    ("body of " + id).getBytes(StandardCharsets.UTF_8)));
        }
        IdemRuntime runtime = Idem.builder().configYaml(yaml(queue)).env(Map.of())
                .broker("activemq", adapter)
                .meterRegistry(meters)
                .handler("orders", (message, context) -> runs.computeIfAbsent(
                        message.idempotencyKey().orElseThrow(), k -> new AtomicInteger()).incrementAndGet())
                .start();
        try {
            int expectedUnique = unique;
            await().atMost(Duration.ofSeconds(90)).until(() ->
                    count(meters, "processed") + count(meters, "duplicate") >= MESSAGES);
            assertThat(runs).hasSize(expectedUnique);
            assertThat(runs.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
            assertThat(count(meters, "processed")).isEqualTo(expectedUnique);
            assertThat(count(meters, "duplicate")).isEqualTo(MESSAGES - expectedUnique);
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
        try (Inbox inbox = new Inbox(adapter, "check", queue, null)) {
            inbox.expectOnlySentinel(adapter, queue);
        } finally {
            adapter.close();
        }
    }

    static String yaml(String queue) {
        return """
                broker: { type: activemq }
                store: { type: caffeine }
                pipelines:
                  orders:
                    source: %s
                    ordering: none
                    concurrency: 4
                    lease: 5s
                """.formatted(queue);
    }

    static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
