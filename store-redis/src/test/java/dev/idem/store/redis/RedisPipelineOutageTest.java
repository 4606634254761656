package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
 * The whole pipeline on Redis while Redis goes away mid-stream and comes back (a {@code redis-server} of
 * the test's own, persisting with fsync on every write so a restart loses nothing): nothing is acked while
 * it is down, and once it is back every message is processed, duplicates still suppressed, and no handler runs
 * twice: the work that was running when it went away completes with its tokens once Redis is back.
 */
class RedisPipelineOutageTest {

    private static final int UNIQUE = 2_000;
    private static final int CONCURRENCY = 4;

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void pipelineAcksNothingWhileRedisIsDownAndProcessesEverythingWhenItReturns(@TempDir Path dir) throws Exception {
        int port = RedisServerProcess.freePort();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 50);
        try (RedisServerProcess redis = new RedisServerProcess(RedisServerProcess.requireBinary("redis-server"), port,
                dir, "--appendonly", "yes", "--appendfsync", "always")) {
            redis.start();
            String yaml = """
                    broker: { type: memory }
                    store:
                      type: redis
                      redis:
                        uri: %s
                        key-prefix: "idem-outage-%s:"
                        command-timeout: 500ms
                    pipelines:
                      orders:
                        source: orders
                        ordering: none
                        concurrency: %d
                        lease: 5s
                    """.formatted(redis.url(), UUID.randomUUID().toString().substring(0, 8), CONCURRENCY);
            IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of())
                    .broker("memory", broker)
                    .meterRegistry(meters)
                    .handler("orders", (message, context) -> {
                        runs.computeIfAbsent(message.idempotencyKey().orElseThrow(), k -> new AtomicInteger())
                                .incrementAndGet();
                        Thread.sleep(2);
                    })
                    .start();
            try {
                int published = 0;
                for (int i = 0; i < UNIQUE; i++) {
                    int copies = i % 10 == 0 ? 2 : 1;
                    for (int c = 0; c < copies; c++) {
                        broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", "order-" + i),
                                ("order " + i).getBytes(StandardCharsets.UTF_8)));
                        published++;
                    }
                }
                await().atMost(Duration.ofSeconds(60)).until(() -> count(meters, "processed") >= 300);

                redis.stop();
                double processedAtOutage = count(meters, "processed");
                double duplicatesAtOutage = count(meters, "duplicate");
                assertThat(processedAtOutage).as("Redis went away mid-stream").isLessThan(UNIQUE);
                await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5)).until(() ->
                        count(meters, "processed") == processedAtOutage
                                && count(meters, "duplicate") == duplicatesAtOutage);
                assertThat(broker.depth("orders") + broker.unsettled("orders"))
                        .as("everything not processed before the outage is still with the broker")
                        .isEqualTo(published - (int) processedAtOutage - (int) duplicatesAtOutage);

                redis.start();
                await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
                        .until(() -> broker.depth("orders") + broker.unsettled("orders") == 0);

                assertThat(runs).hasSize(UNIQUE);
                assertThat(runs.entrySet().stream().filter(e -> e.getValue().get() > 1).map(Map.Entry::getKey))
                        .as("IDs whose handler ran twice").isEmpty();
                assertThat(count(meters, "processed")).isEqualTo(UNIQUE);
                assertThat(broker.depth("orders.DLQ")).isZero();
            } finally {
                runtime.stop(Duration.ofSeconds(10));
            }
        } finally {
            broker.close();
        }
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
