package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.api.MessageHandler;
import dev.idem.bench.BaselineStore;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.bench.ThreadCpu;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import dev.idem.spi.SubscriptionRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * End-to-end consumption rate of the Kafka adapter through the real runtime (Caffeine store, a no-op
 * handler, the default pipeline settings: key ordering, concurrency 4, max-in-flight 1000), against the raw
 * {@link KafkaConsumer} reading the same pre-filled topic the way a hand-written deduplicating consumer does:
 * poll up to 2,000 records, skip every record whose {@code message-id} a {@link HashSet} already holds,
 * {@code commitSync} after each poll. Runs alternate (raw, Idem, adapter; then Idem, adapter, raw; ...) in one
 * JVM against one embedded single-node broker, for a topic of 1 and of 4 partitions; each run is a fresh
 * consumer group reading the whole topic from the start, timed from its first record to its last one settled
 * (group joins are not timed). The third side, "adapter", is the adapter alone with a listener that acks
 * every delivery at once: it tells the adapter's cost apart from the pipeline's. Prints every run, then the
 * median rates and the ratios to raw.
 *
 * <p>Each topic holds {@code messages} records of 100 bytes over 1,024 record keys; {@code duplicate-percent}
 * % of them (10 by default; at most 50) repeat the {@code message-id}, key and payload of a record a few
 * positions earlier, as a producer's retry would. Idem settles those as duplicates, the raw consumer skips
 * them, and both count every record.
 *
 * <p>A plain {@code main} rather than JMH: one iteration is one full read of a topic by a new group, which
 * JMH's single-shot mode would only wrap.
 *
 * <p>Run (after {@code mvn -q -B -pl bench -am package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaEndToEndBenchmark [messages=1000000]
 * [rounds=3] [duplicate-percent=10]}; {@code -Didem.bench.settings=...} adds pipeline settings to Idem's side (YAML
 * lines, {@code \n} between them), e.g. {@code max-in-flight: 4000}; {@code -Didem.bench.sides=idem} runs only the sides
 * named; {@code -Didem.bench.cpu=true} adds the CPU time Idem's threads used per message, by role;
 * {@code -Didem.bench.store=baseline} runs Idem's side on a store that remembers nothing.
 */
public final class KafkaEndToEndBenchmark {

    /** Pipeline settings added to Idem's side, {@code -Didem.bench.settings=...}; none by default. */
    private static final String SETTINGS = System.getProperty("idem.bench.settings", "").replace("\\n", "\n");

    /**
     * The sides to run, {@code -Didem.bench.sides=idem} (comma-separated, of raw, idem and adapter; all by
     * default), to profile one of them; a ratio to a side not run prints as NaN, and an unknown name is refused.
     */
    private static final List<String> ALL_SIDES = List.of("raw", "idem", "adapter");
    private static final List<String> SIDES = Arrays.stream(System.getProperty("idem.bench.sides",
            String.join(",", ALL_SIDES)).split(",")).map(String::trim).toList();

    /**
     * Whether to report the CPU time Idem's threads used per message, by role, {@code -Didem.bench.cpu=true}: sampled
     * every 10 ms ({@link ThreadCpu}), over every round.
     */
    private static final boolean CPU = Boolean.getBoolean("idem.bench.cpu");

    /**
     * The store of Idem's side, {@code -Didem.bench.store=...}: {@code caffeine} (the default), or {@code baseline}, a
     * store that acquires every key and remembers nothing ({@link BaselineStore}): what the pipeline costs beyond
     * any store. With it no repeat is found, so every record runs the handler.
     */
    private static final String STORE = System.getProperty("idem.bench.store", "caffeine");

    private static final int PAYLOAD_BYTES = 100;
    private static final int KEYS = 1024;
    private static final int RAW_MAX_POLL_RECORDS = 2_000;

    private KafkaEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int duplicatePercent = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        if (duplicatePercent < 0 || duplicatePercent > 50) {
            throw new IllegalArgumentException("duplicate-percent must be 0 to 50, not " + duplicatePercent);
        }
        if (!STORE.equals("caffeine") && !STORE.equals("baseline")) {
            throw new IllegalArgumentException("-Didem.bench.store=" + STORE + ": unknown store; use caffeine (the"
                    + " default) or baseline (remembers nothing)");
        }
        List<String> unknown = SIDES.stream().filter(side -> !ALL_SIDES.contains(side)).toList();
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException("-Didem.bench.sides=" + String.join(",", SIDES) + ": unknown side "
                    + String.join(", ", unknown) + "; name one or more of " + String.join(", ", ALL_SIDES)
                    + ", comma-separated");
        }
        int distinct = messages - repeatCount(messages, duplicatePercent);
        System.out.printf("Kafka end-to-end: %,d records per run (%,d distinct IDs), %d rounds%n", messages,
                distinct, rounds);
        List<String> summary = new ArrayList<>();
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            for (int partitions : new int[] {1, 4}) {
                String topic = "bench-" + partitions + "p";
                kafka.createTopic(topic, partitions);
                fill(kafka, topic, messages, duplicatePercent);
                Map<String, Side> sides = new LinkedHashMap<>();
                sides.put("raw", run -> EndToEnd.rate(messages, raw(kafka, topic, messages, distinct, run)));
                Map<String, Long> idemCpu = new TreeMap<>();
                sides.put("idem", run -> {
                    String pipeline = "idem-" + topic + "-" + run;
                    ThreadCpu cpu = CPU ? new ThreadCpu(name -> roleOf(name, pipeline)) : null;
                    if (cpu != null) {
                        cpu.start();
                    }
                    MessageHandler noOp = (message, context) -> { };
                    long took = STORE.equals("baseline")
                            ? KafkaBench.timeIdem(kafka, pipeline, topic, SETTINGS, messages, noOp, "baseline",
                                    "{ type: baseline }", new BaselineStore())
                            : KafkaBench.timeIdem(kafka, pipeline, topic, SETTINGS, messages, noOp);
                    if (cpu != null) {
                        cpu.stop().forEach((role, nanos) -> idemCpu.merge(role, nanos, Long::sum));
                    }
                    return EndToEnd.rate(messages, took);
                });
                sides.put("adapter", run -> EndToEnd.rate(messages, adapterOnly(kafka, topic, messages, run)));
                sides.keySet().retainAll(SIDES);
                Map<String, List<Double>> rates = EndToEnd.alternate(partitions + "p", 0, rounds, sides);
                double rawMedian = medianOf(rates, "raw");
                double idemMedian = medianOf(rates, "idem");
                double bareMedian = medianOf(rates, "adapter");
                summary.add(String.format("%d partition(s): raw %,.0f msg/s, idem %,.0f msg/s, idem/raw %.2f;"
                        + " adapter alone %,.0f msg/s, adapter/raw %.2f", partitions, rawMedian, idemMedian,
                        idemMedian / rawMedian, bareMedian, bareMedian / rawMedian));
                if (!idemCpu.isEmpty()) {
                    long handled = (long) messages * rounds;
                    StringBuilder line = new StringBuilder(String.format("  idem's threads: %.2f us of CPU a message",
                            idemCpu.values().stream().mapToLong(Long::longValue).sum() / 1000.0 / handled));
                    idemCpu.forEach((role, nanos) -> line.append(String.format("; %s %.2f", role,
                            nanos / 1000.0 / handled)));
                    summary.add(line.toString());
                }
            }
        }
        System.out.println("--- medians over " + rounds + " rounds of " + messages + " messages");
        summary.forEach(System.out::println);
    }

    /**
     * The role of an Idem thread of {@code pipeline} (the Kafka consumer, the dispatcher that runs the intake, the
     * workers, the committers, the timer), or {@code null} for a thread of something else.
     */
    private static String roleOf(String thread, String pipeline) {
        if (thread.equals("idem-kafka-" + pipeline)) {
            return "consumer";
        }
        if (thread.equals("idem-kafka-dispatch-" + pipeline)) {
            return "intake";
        }
        if (thread.equals("idem-" + pipeline + "-timer")) {
            return "timer";
        }
        if (thread.startsWith("idem-" + pipeline + "-commit")) {
            return "committers";
        }
        if (thread.startsWith("idem-" + pipeline + "-")) {
            return "workers";
        }
        return null;
    }

    private static double medianOf(Map<String, List<Double>> rates, String side) {
        return rates.containsKey(side) ? EndToEnd.median(rates.get(side)) : Double.NaN;
    }

    /**
     * Whether record {@code i} repeats record {@code i - duplicatePercent}: the first {@code duplicatePercent}
     * records of every hundred after the first, each repeating one of the previous hundred's last ones.
     */
    private static boolean isRepeat(int i, int duplicatePercent) {
        return i >= 100 && i % 100 < duplicatePercent;
    }

    /** How many of {@code messages} records repeat an earlier one. */
    static int repeatCount(int messages, int duplicatePercent) {
        int n = 0;
        for (int i = 0; i < messages; i++) {
            if (isRepeat(i, duplicatePercent)) {
                n++;
            }
        }
        return n;
    }

    static void fill(EmbeddedKafka kafka, String topic, int messages, int duplicatePercent) {
        byte[] payload = new byte[PAYLOAD_BYTES];
        try (KafkaProducer<byte[], byte[]> producer = KafkaBench.producer(kafka)) {
            for (int i = 0; i < messages; i++) {
                int id = isRepeat(i, duplicatePercent) ? i - duplicatePercent : i;
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic,
                        ("key-" + (id % KEYS)).getBytes(StandardCharsets.UTF_8), payload);
                r.headers().add("message-id", ("msg-" + id).getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
    }

    /**
     * The hand-written consumer: poll up to 2,000 records, skip the IDs already seen, commitSync after each
     * poll.
     */
    static long raw(EmbeddedKafka kafka, String topic, int messages, int distinct, int run) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "raw-" + topic + "-" + run);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, RAW_MAX_POLL_RECORDS);
        Set<String> seen = new HashSet<>();
        long records = 0;
        long checksum = 0;
        long start = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (records < messages) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                if (polled.isEmpty()) {
                    continue;
                }
                if (start == 0) {
                    start = System.nanoTime();
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    records++;
                    if (seen.add(new String(r.headers().lastHeader("message-id").value(), StandardCharsets.UTF_8))) {
                        checksum += r.value().length;
                    }
                }
                consumer.commitSync();
            }
            long took = System.nanoTime() - start;
            if (seen.size() != distinct || checksum == 0) {
                throw new IllegalStateException("The raw consumer saw " + seen.size() + " distinct IDs, not "
                        + distinct);
            }
            return took;
        }
    }
    /**
     * The adapter without the runtime: a listener that acks every delivery at once. Separates the adapter's
     * own cost (decoding, offset tracking, commits) from the pipeline's (ID, fingerprint, store, metrics).
     */
    private static long adapterOnly(EmbeddedKafka kafka, String topic, int messages, int run) throws Exception {
        AtomicLong acked = new AtomicLong();
        AtomicLong first = new AtomicLong();
        try (BrokerAdapter adapter = KafkaBench.adapter(kafka)) {
            adapter.subscribe(new SubscriptionRequest("adapter-" + topic + "-" + run, topic, 1000, null), batch -> {
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
