package dev.idem.bench.parallelconsumer;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import io.confluent.parallelconsumer.internal.DrainingCloseable.DrainingMode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The Confluent Parallel Consumer side of {@code dev.idem.bench.kafka.KeyOrderedBenchmark}, in its own JVM
 * (Parallel Consumer 0.5.3.3 runs on kafka-clients 3.x; Idem on 4.x). The benchmark starts it and drives it
 * over standard input and output, one line each way per run, so that one warm JVM serves every round, as
 * Idem's side is one warm JVM too.
 *
 * <p>Arguments: {@code <bootstrap-servers> <max-concurrency> <handler-millis>}. Each input line
 * {@code run <topic> <group> <records>} reads the whole topic with a new consumer group: a
 * {@link ParallelStreamProcessor} with {@link ProcessingOrder#KEY}, {@code maxConcurrency} as given, commit
 * mode {@link CommitMode#PERIODIC_CONSUMER_ASYNCHRONOUS} (its default), batch size 1 (its default), and a
 * handler that sleeps {@code handler-millis} and checks that each key's records arrive in their order (their {@code seq} header counts 0, 1, 2, ... per key). Once every record has been
 * handled it answers {@code done <nanos> <order-violations>}, the nanoseconds from the first handler call to
 * the end of the last one, then closes the processor (not timed). {@code quit} or the end of input exits.
 */
public final class ParallelConsumerRunner {

    private ParallelConsumerRunner() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int maxConcurrency = Integer.parseInt(args[1]);
        long handlerMillis = Long.parseLong(args[2]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null && !line.equals("quit"); line = in.readLine()) {
            String[] words = line.trim().split(" ");
            if (words.length != 4 || !words[0].equals("run")) {
                System.err.println("Expected 'run <topic> <group> <records>' or 'quit', got: " + line);
                System.exit(2);
            }
            long[] result = run(bootstrap, words[1], words[2], Integer.parseInt(words[3]), maxConcurrency,
                    handlerMillis);
            System.out.println("done " + result[0] + " " + result[1]);
            System.out.flush();
        }
    }

    /** Returns the nanoseconds from the first handler call to the last one's end, and the order violations. */
    private static long[] run(String bootstrap, String topic, String group, int records, int maxConcurrency,
            long handlerMillis) throws InterruptedException {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new ByteArrayDeserializer());
        ParallelConsumerOptions<String, byte[]> options = ParallelConsumerOptions.<String, byte[]>builder()
                .consumer(consumer)
                .ordering(ProcessingOrder.KEY)
                .maxConcurrency(maxConcurrency)
                .commitMode(CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
                .ignoreReflectiveAccessExceptionsForAutoCommitDisabledCheck(true)
                .build();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        AtomicLong handled = new AtomicLong();
        AtomicLong violations = new AtomicLong();
        Map<String, Integer> nextSeq = new ConcurrentHashMap<>();
        ParallelStreamProcessor<String, byte[]> processor = ParallelStreamProcessor.createEosStreamProcessor(options);
        try {
            processor.subscribe(List.of(topic));
            processor.poll(context -> {
                first.compareAndSet(0, System.nanoTime());
                for (ConsumerRecord<String, byte[]> record : context.getConsumerRecordsFlattened()) {
                    sleep(handlerMillis);
                    Header seq = record.headers().lastHeader("seq");
                    int expected = nextSeq.getOrDefault(record.key(), 0);
                    int actual = Integer.parseInt(new String(seq.value(), StandardCharsets.UTF_8));
                    if (actual != expected) {
                        violations.incrementAndGet();
                    }
                    nextSeq.put(record.key(), actual + 1);
                    last.accumulateAndGet(System.nanoTime(), Math::max);
                    handled.incrementAndGet();
                }
            });
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
            while (handled.get() < records) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("Parallel Consumer handled " + handled.get() + " of " + records
                            + " records of " + topic + " in 10 minutes");
                }
                Thread.sleep(1);
            }
            return new long[] {last.get() - first.get(), violations.get()};
        } finally {
            processor.close(Duration.ofSeconds(30), DrainingMode.DONT_DRAIN);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
