package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.fault.AckAudit;
import dev.idem.testkit.fault.FaultProxy;
import dev.idem.testkit.fault.HandlerRuns;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
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
 * The whole runtime on Kafka reached through a {@link FaultProxy}, whose connections are reset (TCP RST) three times
 * while offsets are committed, with the Caffeine store. Kafka tells a client the address of the listener it
 * bootstrapped through, so the test starts a broker of its own with a second listener advertised as the proxy's
 * address ({@link EmbeddedKafka#startWithListener}): the consumer's every connection (bootstrap, fetches, the group
 * coordinator, commits) goes through the proxy, while the test's producer and admin client use the direct listener.
 * Nothing may be lost (every ID ran, and the group's committed offsets reach the end of every partition), nothing
 * acked early (each ack is checked, when it is given, against the store: the key must be completed), and no handler
 * may run twice. Prints a {@code [fault]} line.
 */
class KafkaConnectionResetTest {

    private static final int UNIQUE = 4_000;
    private static final int PARTITIONS = 4;
    private static final String PIPELINE = "orders";

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void connectionResetsDuringCommitsLoseNothingAckNothingEarlyAndReRunNoHandler() throws Exception {
        int listenerPort = EmbeddedKafka.freePort();
        String topic = "idem-reset-" + UUID.randomUUID().toString().substring(0, 8);
        String groupPrefix = "idem-reset-" + UUID.randomUUID().toString().substring(0, 8) + "-";
        CaffeineDedupStoreProvider stores = new CaffeineDedupStoreProvider();
        InspectableDedupStore store = (InspectableDedupStore) stores.create(
                TestPluginConfig.defaults("store.caffeine", stores.configSpec()), StoreContext.system());
        HandlerRuns runs = new HandlerRuns();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        List<Integer> connectionsReset = new ArrayList<>();
        List<Long> commitsResumedMillis = new ArrayList<>();
        try (FaultProxy proxy = FaultProxy.start("127.0.0.1", listenerPort);
                EmbeddedKafka kafka = EmbeddedKafka.startWithListener("PROXIED", listenerPort,
                        proxy.host() + ":" + proxy.port())) {
            kafka.createTopic(topic, PARTITIONS);
            int published = publish(kafka, topic);
            KafkaAdapter adapter = KafkaTestSupport.adapter(TestPluginConfig.defaults("broker.kafka",
                            new KafkaAdapterProvider().configSpec())
                    .with("bootstrap-servers", List.of(proxy.host() + ":" + proxy.port()))
                    .with("group-id-prefix", groupPrefix)
                    .with("commit-interval", "100ms")
                    .with("poll-timeout", "100ms")
                    .with("revoke-timeout", "2s"));
            AckAudit audit = new AckAudit(adapter, message -> completed(store, message), true);
            IdemRuntime runtime = Idem.builder().configYaml("""
                    broker: { type: audited-kafka }
                    store: { type: caffeine }
                    runtime: { http.enabled: false }
                    pipelines:
                      %s:
                        source: %s
                        ordering: none
                        concurrency: 4
                        max-in-flight: 200
                    """.formatted(PIPELINE, topic)).env(Map.of())
                    .broker("audited-kafka", audit)
                    .store("caffeine", store)
                    .meterRegistry(meters)
                    .handler(PIPELINE, (message, context) -> {
                        runs.record(message.idempotencyKey().orElseThrow());
                        Thread.sleep(3);
                    })
                    .start();
            String group = groupPrefix + PIPELINE;
            try {
                for (int at : new int[] {UNIQUE / 5, UNIQUE * 2 / 5, UNIQUE * 3 / 5}) {
                    await().atMost(Duration.ofSeconds(60)).until(() -> count(meters, "processed") >= at);
                    long committed = committedSum(kafka, topic, group);
                    long resetAt = System.nanoTime();
                    connectionsReset.add(proxy.reset());
                    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20))
                            .until(() -> committedSum(kafka, topic, group) > committed);
                    commitsResumedMillis.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - resetAt));
                }
                await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
                        .until(() -> runs.keys().size() == UNIQUE && everythingCommitted(kafka, topic, group));
            } finally {
                runtime.stop(Duration.ofSeconds(10));
                audit.close();
            }

            List<String> ids = new ArrayList<>();
            for (int i = 0; i < UNIQUE; i++) {
                ids.add("order-" + i);
            }
            assertThat(connectionsReset).as("connections reset each time").allMatch(n -> n >= 1);
            assertThat(everythingCommitted(kafka, topic, group)).as("the group's offsets at the end of every"
                    + " partition: the broker holds every message acked").isTrue();
            assertThat(runs.neverRan(ids)).as("IDs whose handler never ran").isEmpty();
            assertThat(Set.copyOf(ids).stream().filter(id -> store.inspect(new StoreKey(PIPELINE, id))
                    .map(k -> k.state() != StoredKey.State.COMPLETED).orElse(true)).toList())
                    .as("IDs not completed in the store").isEmpty();
            assertThat(audit.earlyAcks()).as("acks given before the key was completed").isEmpty();
            assertThat(audit.deadLetters()).isZero();
            assertThat(runs.reruns()).as("handler re-runs (IDs %s); outcomes %s", runs.rerunKeys(),
                    outcomes(meters)).isZero();
            assertThat(count(meters, "processed")).isEqualTo(UNIQUE);
            System.out.printf("[fault] Kafka connections reset during commits (4 partitions): published %,d (%,d"
                    + " unique, %,d repeats); resets %d (connections reset %s, %d proxied connections in all); acks"
                    + " %,d (redelivered and found duplicates beyond the repeats: %,d); lost %d; early acks %d;"
                    + " handler runs %,d (re-runs %d); commits reached the broker again %s ms after each reset%n",
                    published, UNIQUE, published - UNIQUE, connectionsReset.size(), connectionsReset,
                    proxy.acceptedConnections(), audit.acks(),
                    (long) count(meters, "duplicate") - (published - UNIQUE), runs.neverRan(ids).size(),
                    audit.earlyAcks().size(), runs.total(), runs.reruns(), commitsResumedMillis);
        } finally {
            store.close();
        }
    }

    private static boolean completed(InspectableDedupStore store, InboundMessage message) {
        return store.inspect(new StoreKey(PIPELINE, message.headers().get("message-id")))
                .map(k -> k.state() == StoredKey.State.COMPLETED).orElse(false);
    }

    /** Every unique ID once and every tenth again, spread by key over the partitions, on the direct listener. */
    private static int publish(EmbeddedKafka kafka, String topic) {
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

    private static long committedSum(EmbeddedKafka kafka, String topic, String group) {
        long sum = 0;
        for (int p = 0; p < PARTITIONS; p++) {
            sum += Math.max(0, kafka.committed(group, new TopicPartition(topic, p)));
        }
        return sum;
    }

    private static boolean everythingCommitted(EmbeddedKafka kafka, String topic, String group) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        var ends = kafka.admin().listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        for (var end : ends.entrySet()) {
            if (kafka.committed(group, end.getKey()) != end.getValue().offset()) {
                return false;
            }
        }
        return true;
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    private static Map<String, Double> outcomes(SimpleMeterRegistry meters) {
        return meters.find("idem.messages").counters().stream().collect(Collectors.groupingBy(
                c -> c.getId().getTag("outcome"), TreeMap::new, Collectors.summingDouble(Counter::count)));
    }
}
