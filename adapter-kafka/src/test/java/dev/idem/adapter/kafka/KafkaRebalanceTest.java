package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two runtimes of one pipeline (one consumer group) on a 4-partition topic, sharing one Caffeine dedup store:
 * a second consumer joins mid-stream (a cooperative rebalance moves partitions to it), then it is killed with
 * handlers blocked. Every message is processed, none is lost, and the handler runs once per unique ID except
 * for the work the killed consumer held at that moment.
 *
 * <p>How the kill is simulated: after some messages, every handler run of the victim blocks. The test then
 * closes the victim's adapter, whose consumer leaves the group having committed only offsets of work that
 * was acknowledged, contiguous per partition; nothing in flight is committed and later settles of the victim's
 * deliveries are ignored. That is what a crash leaves behind (a crash would also lose acknowledged offsets
 * not yet committed, which only adds duplicates the store suppresses), except that the group rebalances at
 * once instead of after the session timeout. The victim's blocked handler runs end by its handler timeout,
 * which releases their keys in the shared store so that the survivor can claim them; those keys are the only
 * ones whose handler may run twice, bounded by the victim's max-in-flight.
 */
class KafkaRebalanceTest {

    private static final int UNIQUE = 2_000;
    private static final int VICTIM_RUNS_BEFORE_BLOCKING = 50;
    private static final int VICTIM_MAX_IN_FLIGHT = 8;

    private final EmbeddedKafka kafka = EmbeddedKafka.shared();

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void everyMessageIsProcessedOnceThroughAJoinAndAKilledConsumer() throws Exception {
        String topic = "idem-rebalance-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(topic, 4);
        int published = publish(topic);

        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Set<String> completed = ConcurrentHashMap.newKeySet();
        DedupStore store = new CaffeineDedupStoreProvider().create(
                TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
                StoreContext.system());
        SimpleMeterRegistry survivorMeters = new SimpleMeterRegistry();
        SimpleMeterRegistry victimMeters = new SimpleMeterRegistry();
        AtomicInteger victimRuns = new AtomicInteger();
        AtomicInteger blocked = new AtomicInteger();
        CountDownLatch never = new CountDownLatch(1);

        KafkaAdapter survivorAdapter = KafkaTestSupport.adapter(KafkaTestSupport.config());
        KafkaAdapter victimAdapter = KafkaTestSupport.adapter(KafkaTestSupport.config().with("revoke-timeout", "0"));
        IdemRuntime survivor = Idem.builder().configYaml(yaml(topic, 2, 100)).env(Map.of())
                .broker("kafka", survivorAdapter).store("caffeine", store).meterRegistry(survivorMeters)
                .handler("rebalance", (message, context) -> {
                    String id = message.idempotencyKey().orElseThrow();
                    runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                    Thread.sleep(5);
                    completed.add(id);
                })
                .start();
        IdemRuntime victim = null;
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> completed.size() >= 200);

            victim = Idem.builder().configYaml(yaml(topic, 2, VICTIM_MAX_IN_FLIGHT)).env(Map.of())
                    .broker("kafka", victimAdapter).store("caffeine", store).meterRegistry(victimMeters)
                    .handler("rebalance", (message, context) -> {
                        String id = message.idempotencyKey().orElseThrow();
                        runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                        if (victimRuns.incrementAndGet() > VICTIM_RUNS_BEFORE_BLOCKING) {
                            blocked.incrementAndGet();
                            never.await();
                        }
                        Thread.sleep(5);
                        completed.add(id);
                    })
                    .start();
            await().atMost(Duration.ofSeconds(60)).until(() -> blocked.get() >= 1);
            assertThat(completed).as("the victim joined mid-stream").hasSizeLessThan(UNIQUE);

            victimAdapter.close();

            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
                    .until(() -> completed.size() == UNIQUE && everythingCommitted(topic));

            long reruns = runs.values().stream().filter(n -> n.get() > 1).count();
            System.out.printf("rebalance: survivor processed %.0f, victim processed %.0f, victim blocked %d,"
                    + " handler re-runs %d, duplicates %.0f%n", count(survivorMeters, "processed"),
                    count(victimMeters, "processed"), blocked.get(), reruns,
                    count(survivorMeters, "duplicate") + count(victimMeters, "duplicate"));
            assertThat(runs).hasSize(UNIQUE);
            assertThat(reruns).as("handler re-runs: only work the victim held when it was killed")
                    .isLessThanOrEqualTo(VICTIM_MAX_IN_FLIGHT);
            assertThat(count(survivorMeters, "processed") + count(victimMeters, "processed"))
                    .as("processed once per unique ID").isEqualTo(UNIQUE);
            assertThat(count(survivorMeters, "duplicate") + count(victimMeters, "duplicate"))
                    .as("published copies suppressed").isGreaterThanOrEqualTo(published - UNIQUE);
            assertThat(count(victimMeters, "processed")).as("the victim did process its share")
                    .isGreaterThanOrEqualTo(VICTIM_RUNS_BEFORE_BLOCKING);
        } finally {
            never.countDown();
            if (victim != null) {
                victim.stop(Duration.ofSeconds(5));
            }
            survivor.stop(Duration.ofSeconds(10));
            victimAdapter.close();
            survivorAdapter.close();
            store.close();
            kafka.deleteTopic(topic);
        }
    }

    private String yaml(String topic, int concurrency, int maxInFlight) {
        return """
                broker: { type: kafka, kafka: { bootstrap-servers: [%s] } }
                store: { type: caffeine }
                pipelines:
                  rebalance:
                    source: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 2s
                    handler-timeout: 1s
                    retry:
                      max-attempts: 1
                """.formatted(kafka.bootstrapServers(), topic, concurrency, maxInFlight);
    }

    /** Publishes every unique ID once, and every tenth a second time, spread by key over the partitions. */
    private int publish(String topic) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        int published = 0;
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props, new StringSerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < UNIQUE; i++) {
                for (int copy = 0; copy < (i % 10 == 0 ? 2 : 1); copy++) {
                    ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, "key-" + (i % 64),
                            ("order " + i).getBytes(StandardCharsets.UTF_8));
                    record.headers().add("message-id", ("order-" + i).getBytes(StandardCharsets.UTF_8));
                    producer.send(record);
                    published++;
                }
            }
            producer.flush();
        }
        return published;
    }

    private boolean everythingCommitted(String topic) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < 4; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        var ends = kafka.admin().listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        for (var end : ends.entrySet()) {
            if (kafka.committed("rebalance", end.getKey()) != end.getValue().offset()) {
                return false;
            }
        }
        return true;
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
