package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The workload of the key-ordered benchmarks: a topic whose records are spread over a fixed set of Kafka
 * record keys ({@code key-0}, {@code key-1}, ...), each with a unique {@code message-id} header and a
 * {@code seq} header that counts the records of its key (0, 1, 2, ...), so a handler can tell whether a key's
 * records ran in order; and that handler. The order of keys in the topic is shuffled with a fixed seed, so
 * every run of a benchmark reads the same topic.
 */
final class KeyedTopic {

    /** Marks the records whose first run fails in the transient-failure benchmark. */
    static final String FAIL_HEADER = "fail";

    private static final byte[] PAYLOAD = new byte[100];
    private static final long SEED = 42;

    private KeyedTopic() {
    }

    /** How the records are spread over the keys. */
    enum Distribution {
        /** Every key carries as many records as any other (within one). */
        UNIFORM,
        /** A tenth of the keys carry half of the records; the other keys share the other half. */
        SKEWED;

        /** The key of each record, {@code 0} to {@code keys - 1}, in a shuffled order fixed by a seed. */
        int[] keys(int records, int keys) {
            List<Integer> order = new ArrayList<>(records);
            if (this == UNIFORM) {
                spread(order, records, 0, keys);
            } else {
                int hot = Math.max(1, keys / 10);
                spread(order, records / 2, 0, hot);
                spread(order, records - records / 2, hot, keys - hot);
            }
            Collections.shuffle(order, new Random(SEED));
            return order.stream().mapToInt(Integer::intValue).toArray();
        }

        private static void spread(List<Integer> order, int records, int firstKey, int keys) {
            for (int i = 0; i < records; i++) {
                order.add(firstKey + i % keys);
            }
        }

        String label() {
            return name().toLowerCase();
        }
    }

    /**
     * Writes one record per entry of {@code keys} to {@code topic}, of 100 bytes, its key {@code key-<n>}, and
     * marks {@code failPercent} % of them, picked with a fixed seed, with the {@link #FAIL_HEADER} header.
     */
    static void fill(EmbeddedKafka kafka, String topic, int[] keys, int failPercent) {
        boolean[] fail = new boolean[keys.length];
        List<Integer> positions = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            positions.add(i);
        }
        Collections.shuffle(positions, new Random(SEED + 1));
        for (int i = 0; i < (long) keys.length * failPercent / 100; i++) {
            fail[positions.get(i)] = true;
        }
        int[] nextSeq = new int[keys.length == 0 ? 0 : 1 + Arrays.stream(keys).max().getAsInt()];
        try (KafkaProducer<byte[], byte[]> producer = KafkaBench.producer(kafka)) {
            for (int i = 0; i < keys.length; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, bytes("key-" + keys[i]), PAYLOAD);
                r.headers().add("message-id", bytes(topic + "-" + i));
                r.headers().add("seq", bytes(Integer.toString(nextSeq[keys[i]]++)));
                if (fail[i]) {
                    r.headers().add(FAIL_HEADER, bytes("1"));
                }
                producer.send(r);
            }
            producer.flush();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Sleeps for the handler time, then checks the record's {@code seq} against the one its key expects.
     * With {@code failFirstRuns}, the first run of a record marked {@link #FAIL_HEADER} throws at once
     * instead (a transient failure: the retry succeeds). Thread-safe; the order check relies on the runtime
     * running one record of a key at a time, which is what it checks.
     */
    static final class Handler implements MessageHandler {

        private final long sleepMillis;
        private final boolean failFirstRuns;
        private final Map<String, Integer> nextSeq = new ConcurrentHashMap<>();
        private final AtomicLong violations = new AtomicLong();
        private final AtomicLong failures = new AtomicLong();

        Handler(long sleepMillis, boolean failFirstRuns) {
            this.sleepMillis = sleepMillis;
            this.failFirstRuns = failFirstRuns;
        }

        @Override
        public void handle(Message message, HandlerContext context) throws Exception {
            if (failFirstRuns && message.attempt() == 1 && message.headers().containsKey(FAIL_HEADER)) {
                failures.incrementAndGet();
                throw new IllegalStateException("transient failure (benchmark)");
            }
            Thread.sleep(sleepMillis);
            int seq = Integer.parseInt(message.headers().get("seq"));
            Integer expected = nextSeq.put(message.key(), seq + 1);
            if (seq != (expected == null ? 0 : expected)) {
                violations.incrementAndGet();
            }
        }

        /** First runs that failed on purpose. */
        long failures() {
            return failures.get();
        }

        /** Records that ran before an earlier record of their key, or after a later one. */
        long violations() {
            return violations.get();
        }
    }
}
