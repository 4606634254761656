package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.adapter.kafka.KafkaAdapterProvider;
import dev.idem.bench.EndToEnd;
import dev.idem.runtime.Idem;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.Delivery;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * End-to-end consumption rate of the Kafka adapter through the real runtime (Caffeine store, a no-op
 * handler, the default pipeline settings: key ordering, concurrency 4, max-in-flight 1000), against the raw
 * {@link KafkaConsumer} reading the same pre-filled topic the way a hand-written consumer does: poll, touch
 * each record, {@code commitSync} after each poll. Runs alternate (raw, Idem, raw, Idem, ...) in one JVM
 * against one embedded single-node broker, for a topic of 1 and of 4 partitions; each run is a fresh consumer
 * group reading the whole topic from the start, timed from its first record to its last one settled (group
 * joins are not timed). A third run per round, "adapter", is the adapter alone with a listener that acks
 * every delivery at once: it tells the adapter's cost apart from the pipeline's. Prints every run, then
 * the median rates and the ratios to raw.
 *
 * <p>A plain {@code main} rather than JMH: one iteration is one full read of a topic by a new group, which
 * JMH's single-shot mode would only wrap.
 *
 * <p>Run (after {@code mvn -pl bench package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaEndToEndBenchmark [messages=200000] [rounds=5]}
 */
public final class KafkaEndToEndBenchmark {

    private static final int PAYLOAD_BYTES = 100;

    private KafkaEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        List<String> summary = new ArrayList<>();
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            for (int partitions : new int[] {1, 4}) {
                String topic = "bench-" + partitions + "p";
                kafka.createTopic(topic, partitions);
                fill(kafka, topic, messages);
                List<Double> raw = new ArrayList<>();
                List<Double> idem = new ArrayList<>();
                List<Double> bare = new ArrayList<>();
                for (int round = 0; round < rounds; round++) {
                    raw.add(report("raw    ", partitions, round, messages, raw(kafka, topic, messages, round)));
                    idem.add(report("idem   ", partitions, round, messages, idem(kafka, topic, messages, round)));
                    bare.add(report("adapter", partitions, round, messages,
                            adapterOnly(kafka, topic, messages, round)));
                }
                double rawMedian = EndToEnd.median(raw);
                double idemMedian = EndToEnd.median(idem);
                double bareMedian = EndToEnd.median(bare);
                summary.add(String.format("%d partition(s): raw %,.0f msg/s, idem %,.0f msg/s, idem/raw %.2f;"
                        + " adapter alone %,.0f msg/s, adapter/raw %.2f", partitions, rawMedian, idemMedian,
                        idemMedian / rawMedian, bareMedian, bareMedian / rawMedian));
            }
        }
        System.out.println("--- medians over " + rounds + " rounds of " + messages + " messages");
        summary.forEach(System.out::println);
    }

    private static double report(String kind, int partitions, int round, int messages, long nanos) {
        double rate = messages / (nanos / 1e9);
        System.out.printf("%s %dp round %d: %,.0f msg/s (%d ms)%n", kind, partitions, round, rate, nanos / 1_000_000);
        return rate;
    }

    private static void fill(EmbeddedKafka kafka, String topic, int messages) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        byte[] payload = new byte[PAYLOAD_BYTES];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < messages; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic,
                        ("key-" + (i % 1024)).getBytes(StandardCharsets.UTF_8), payload);
                r.headers().add("message-id", ("msg-" + i).getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
    }

    /** The hand-written consumer: poll, touch every record, commitSync after each poll. */
    private static long raw(EmbeddedKafka kafka, String topic, int messages, int round) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "raw-" + topic + "-" + round);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        long seen = 0;
        long checksum = 0;
        long start = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (seen < messages) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                if (records.isEmpty()) {
                    continue;
                }
                if (start == 0) {
                    start = System.nanoTime();
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    checksum += r.value().length + r.headers().lastHeader("message-id").value().length;
                    seen++;
                }
                consumer.commitSync();
            }
            long took = System.nanoTime() - start;
            if (checksum == 0) {
                throw new IllegalStateException("nothing read");
            }
            return took;
        }
    }

    /** The adapter through the runtime: Caffeine store, no-op handler, default pipeline settings. */
    private static long idem(EmbeddedKafka kafka, String topic, int messages, int round) throws Exception {
        BrokerAdapter adapter = new KafkaAdapterProvider().create(
                TestPluginConfig.defaults("broker.kafka", new KafkaAdapterProvider().configSpec())
                        .with("bootstrap-servers", List.of(kafka.bootstrapServers())));
        DedupStore store = new CaffeineDedupStoreProvider().create(
                TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
                StoreContext.system());
        String pipeline = "idem-" + topic + "-" + round;
        String yaml = """
                broker: { type: kafka, kafka: { bootstrap-servers: [%s] } }
                store: { type: caffeine }
                pipelines:
                  %s:
                    source: %s
                """.formatted(kafka.bootstrapServers(), pipeline, topic);
        try {
            return EndToEnd.timeIdem(Idem.builder().configYaml(yaml).env(Map.of())
                    .broker("kafka", adapter).store("caffeine", store), pipeline, messages);
        } finally {
            adapter.close();
            store.close();
        }
    }

    /**
     * The adapter without the runtime: a listener that acks every delivery at once. Separates the adapter's
     * own cost (decoding, offset tracking, commits) from the pipeline's (ID, fingerprint, store, metrics).
     */
    private static long adapterOnly(EmbeddedKafka kafka, String topic, int messages, int round) throws Exception {
        AtomicLong acked = new AtomicLong();
        AtomicLong first = new AtomicLong();
        try (BrokerAdapter adapter = new KafkaAdapterProvider().create(
                TestPluginConfig.defaults("broker.kafka", new KafkaAdapterProvider().configSpec())
                        .with("bootstrap-servers", List.of(kafka.bootstrapServers())))) {
            adapter.subscribe(new SubscriptionRequest("adapter-" + topic + "-" + round, topic, 1000, null), batch -> {
                first.compareAndSet(0, System.nanoTime());
                for (Delivery d : batch) {
                    d.ack();
                }
                acked.addAndGet(batch.size());
            });
            while (acked.get() < messages) {
                Thread.sleep(1);
            }
            return System.nanoTime() - first.get();
        }
    }
}
