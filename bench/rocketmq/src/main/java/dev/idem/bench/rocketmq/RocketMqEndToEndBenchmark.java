package dev.idem.bench.rocketmq;

import dev.idem.adapter.rocketmq.EmbeddedRocketMq;
import dev.idem.adapter.rocketmq.RocketMqAdapterProvider;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.runtime.Idem;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * End-to-end consumption rate of the RocketMQ adapter through the real runtime (Caffeine store, a no-op handler, the
 * default pipeline settings: key ordering, concurrency 4, max-in-flight 1000), against the raw
 * {@link DefaultLitePullConsumer} reading the same pre-filled topic the way a hand-written deduplicating consumer
 * does: poll, skip every message whose {@code message-id} a {@link HashSet} already holds, {@code commitSync} after
 * each poll, with the adapter's pull batch (32) and pull threads (4). Runs alternate (raw, Idem; then Idem, raw; ...)
 * in one JVM against one embedded name server and broker, on a topic of 4 queues; each run is a fresh consumer group
 * reading the whole topic from its first offset, timed from its first message to its last one settled (group joins are
 * not timed). Prints every run, then the median rates and their ratio.
 *
 * <p>The topic holds {@code messages} messages of 100 bytes over 1,024 keys; {@code duplicate-percent} % of them (10
 * by default) repeat the {@code message-id}, key and payload of a message a few positions earlier, as a producer's
 * retry would. Idem settles those as duplicates, the raw consumer skips them, and both count every message.
 *
 * <p>Run (after {@code mvn -q -B -pl bench/rocketmq -am package -DskipTests -Procketmq-bench-jar}):
 * {@code java -cp bench/rocketmq/target/rocketmq-bench.jar dev.idem.bench.rocketmq.RocketMqEndToEndBenchmark
 * [messages=200000] [rounds=3] [duplicate-percent=10]}
 */
public final class RocketMqEndToEndBenchmark {

    private static final int PAYLOAD_BYTES = 100;
    private static final int KEYS = 1024;
    private static final int QUEUES = 4;

    private RocketMqEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int duplicatePercent = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        if (duplicatePercent < 0 || duplicatePercent > 50) {
            throw new IllegalArgumentException("duplicate-percent must be 0 to 50, not " + duplicatePercent);
        }
        int distinct = messages - repeatCount(messages, duplicatePercent);
        System.out.printf("RocketMQ end-to-end: %,d messages per run (%,d distinct IDs), %d rounds, %d queues%n",
                messages, distinct, rounds, QUEUES);
        EmbeddedRocketMq rocketMq = EmbeddedRocketMq.start();
        try {
            String topic = "bench-" + QUEUES + "q";
            rocketMq.createTopic(topic, QUEUES);
            fill(rocketMq, topic, messages, duplicatePercent);
            Map<String, Side> sides = new LinkedHashMap<>();
            sides.put("raw", run -> EndToEnd.rate(messages, raw(rocketMq, topic, messages, distinct, run)));
            sides.put("idem", run -> EndToEnd.rate(messages, idem(rocketMq, topic, messages, run)));
            Map<String, List<Double>> rates = EndToEnd.alternate(QUEUES + "q", 0, rounds, sides);
            double raw = EndToEnd.median(rates.get("raw"));
            double idem = EndToEnd.median(rates.get("idem"));
            System.out.println("--- medians over " + rounds + " rounds of " + messages + " messages");
            System.out.printf("%d queues: raw %,.0f msg/s, idem %,.0f msg/s, idem/raw %.2f%n", QUEUES, raw, idem,
                    idem / raw);
        } finally {
            rocketMq.close();
        }
        System.exit(0);
    }

    /**
     * Whether message {@code i} repeats message {@code i - duplicatePercent}: the first {@code duplicatePercent}
     * messages of every hundred after the first.
     */
    private static boolean isRepeat(int i, int duplicatePercent) {
        return i >= 100 && i % 100 < duplicatePercent;
    }

    private static int repeatCount(int messages, int duplicatePercent) {
        int n = 0;
        for (int i = 0; i < messages; i++) {
            if (isRepeat(i, duplicatePercent)) {
                n++;
            }
        }
        return n;
    }

    /**
     * Fills the topic with synchronous batches of 100 messages (RocketMQ sends a batch to one queue); a batch the
     * embedded broker refuses as busy (its flow control while a commit log file is mapped) is sent again. Filling is not
     * timed.
     */
    private static void fill(EmbeddedRocketMq rocketMq, String topic, int messages, int duplicatePercent)
            throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("bench-filler");
        producer.setNamesrvAddr(rocketMq.nameServer());
        producer.setInstanceName("bench-filler");
        producer.start();
        byte[] payload = new byte[PAYLOAD_BYTES];
        try {
            List<Message> batch = new ArrayList<>(100);
            for (int i = 0; i < messages; i++) {
                int id = isRepeat(i, duplicatePercent) ? i - duplicatePercent : i;
                Message m = new Message(topic, payload);
                m.setKeys("key-" + (id % KEYS));
                m.putUserProperty("message-id", "msg-" + id);
                batch.add(m);
                if (batch.size() == 100 || i == messages - 1) {
                    for (int attempt = 1; ; attempt++) {
                        try {
                            producer.send(batch, 30_000);
                            break;
                        } catch (MQBrokerException busy) {
                            if (attempt == 20) {
                                throw busy;
                            }
                            TimeUnit.MILLISECONDS.sleep(100L * attempt);
                        }
                    }
                    batch = new ArrayList<>(100);
                }
            }
        } finally {
            producer.shutdown();
        }
    }

    /** The hand-written consumer: poll, skip the IDs already seen, commitSync after each poll. */
    private static long raw(EmbeddedRocketMq rocketMq, String topic, int messages, int distinct, int run)
            throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("raw-" + topic + "-" + run);
        consumer.setNamesrvAddr(rocketMq.nameServer());
        consumer.setInstanceName("raw-" + run);
        consumer.setAutoCommit(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPullBatchSize(32);
        consumer.setPullThreadNums(4);
        consumer.subscribe(topic, "*");
        consumer.start();
        Set<String> seen = new HashSet<>();
        long records = 0;
        long checksum = 0;
        long start = 0;
        try {
            while (records < messages) {
                List<MessageExt> polled = consumer.poll(100);
                if (polled.isEmpty()) {
                    continue;
                }
                if (start == 0) {
                    start = System.nanoTime();
                }
                for (MessageExt m : polled) {
                    records++;
                    if (seen.add(m.getUserProperty("message-id"))) {
                        checksum += m.getBody().length;
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
        } finally {
            consumer.shutdown();
        }
    }

    /** Idem with the Caffeine store and a no-op handler, as a new pipeline (consumer group) over the whole topic. */
    private static long idem(EmbeddedRocketMq rocketMq, String topic, int messages, int run) throws Exception {
        String pipeline = "idem-" + topic + "-" + run;
        BrokerAdapter adapter = new RocketMqAdapterProvider().create(
                TestPluginConfig.defaults("broker.rocketmq", new RocketMqAdapterProvider().configSpec())
                        .with("name-server", List.of(rocketMq.nameServer())));
        DedupStore store = new CaffeineDedupStoreProvider().create(
                TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
                StoreContext.system());
        String yaml = """
                broker: { type: rocketmq, rocketmq: { name-server: [%s] } }
                store: { type: caffeine }
                pipelines:
                  %s:
                    source: %s
                """.formatted(rocketMq.nameServer(), pipeline, topic);
        try {
            return EndToEnd.timeIdem(Idem.builder().configYaml(yaml).env(Map.of()).broker("rocketmq", adapter)
                    .store("caffeine", store), pipeline, messages);
        } finally {
            adapter.close();
            store.close();
            TimeUnit.MILLISECONDS.sleep(100);
        }
    }
}
