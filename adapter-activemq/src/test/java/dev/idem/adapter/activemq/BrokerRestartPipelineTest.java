package dev.idem.adapter.activemq;

import static dev.idem.adapter.activemq.PipelineDuplicatesTest.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.OutboundMessage;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import dev.idem.spi.Delivery;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole runtime (Caffeine store) consuming through a {@code failover:} URL while the broker is stopped
 * and started again mid-stream, on the same port and data directory: every message is processed, and the
 * handler runs more than once only for work in flight at the restart. Nothing ends up in the broker's own
 * dead-letter queue.
 */
class BrokerRestartPipelineTest {

    private static final int MESSAGES = 2_000;
    private static final int CONCURRENCY = 4;

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void brokerRestartMidStreamLosesNothing(@TempDir Path dir) throws Exception {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (TestBroker broker = new TestBroker(dir)) {
            broker.start();
            String failover = "failover:(" + broker.tcpUrl() + ")?initialReconnectDelay=50&maxReconnectDelay=500";
            BrokerAdapter adapter = TestBroker.adapter(TestBroker.defaults().with("url", failover)
                    .with("consumers", 2).with("redelivery.initial-delay", "0"));
            for (int i = 0; i < MESSAGES; i++) {
                adapter.publish("orders", new OutboundMessage(null, null, Map.of("message-id", "order-" + i),
                        ("order " + i).getBytes(StandardCharsets.UTF_8)));
            }
            IdemRuntime runtime = Idem.builder().configYaml(PipelineDuplicatesTest.yaml("orders")
                            .replace("concurrency: 4", "concurrency: " + CONCURRENCY))
                    .env(Map.of())
                    .broker("activemq", adapter)
                    .meterRegistry(meters)
                    .handler("orders", (message, context) -> {
                        runs.computeIfAbsent(message.idempotencyKey().orElseThrow(), k -> new AtomicInteger())
                                .incrementAndGet();
                        Thread.sleep(1);
                    })
                    .start();
            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> count(meters, "processed") >= 300);
                broker.stop();
                double processedAtStop = count(meters, "processed");
                assertThat(processedAtStop).as("the broker went away mid-stream").isLessThan(MESSAGES);
                assertThatThrownBy(adapter::checkHealth).isInstanceOfSatisfying(BrokerException.class,
                        e -> assertThat(e.retriable()).isTrue());
                broker.start();
                await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(adapter::checkHealth);

                await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
                        .until(() -> runs.size() == MESSAGES);
                long reruns = runs.values().stream().filter(n -> n.get() > 1).count();
                System.out.printf("broker restart: %d unique ids processed, %d processed before the stop, "
                        + "%d handler re-runs, %.0f processed, %.0f duplicates, %.0f deferred%n", runs.size(),
                        (long) processedAtStop, reruns, count(meters, "processed"), count(meters, "duplicate"),
                        count(meters, "deferred"));
                assertThat(reruns).as("re-runs only for work in flight at the restart").isLessThanOrEqualTo(CONCURRENCY);
                assertThat(count(meters, "duplicate"))
                        .as("redelivered: at most what the two consumers' windows held unacknowledged")
                        .isLessThanOrEqualTo(2.0 * ActiveMqBrokerAdapterProvider.MAX_PREFETCH);
            } finally {
                runtime.stop(Duration.ofSeconds(10));
            }
            try (Inbox inbox = new Inbox(adapter, "check", "orders", null);
                    Inbox brokerDlq = new Inbox(adapter, "check-dlq", "ActiveMQ.DLQ", null)) {
                // Redelivered copies the runtime had not yet recognised as duplicates when it stopped stay on
                // the queue, unacknowledged: each of them must be a message already processed.
                String marker = "sentinel-" + UUID.randomUUID();
                adapter.publish("orders", new OutboundMessage(null, null, Map.of(), marker.getBytes(UTF_8)));
                int leftCopies = 0;
                for (Delivery d = inbox.next(); !Inbox.text(d).equals(marker); d = inbox.next()) {
                    assertThat(runs).containsKey(d.message().headers().get("message-id"));
                    leftCopies++;
                    d.ack();
                }
                System.out.printf("broker restart: %d redelivered copies were still queued at the end%n", leftCopies);
                // Regression: the client's duplicate audit poison-acked redeliveries after the reconnect.
                brokerDlq.expectOnlySentinel(adapter, "ActiveMQ.DLQ");
            } finally {
                adapter.close();
            }
        }
    }
}
