package dev.idem.bench.soak;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The soak's messages, published to Kafka at a steady rate by a thread of its own: IDs {@code <prefix>-<n>} for
 * {@code n} from 1 (key {@code order-<n>}, a small order-paid payload), and, for {@code repeatPercent} of the
 * messages, a repeat of an ID sent a few to a few hundred messages before. Every record is acknowledged by the broker
 * ({@code acks=all}, idempotent); the time each {@code n} was first sent is kept, for the end-to-end latency.
 *
 * <p>Thread-safe: the publishing thread writes, any thread reads {@link #sentAt}, {@link #highest} and the counts.
 */
final class SoakStream implements AutoCloseable {

    private final String bootstrapServers;
    private final String topic;
    private final String idPrefix;
    private final int repeatPercent;
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong acknowledged = new AtomicLong();
    private final AtomicLong repeats = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicReference<Exception> firstFailure = new AtomicReference<>();
    /** Epoch milliseconds of each {@code n}'s first send, index {@code n}; replaced whole when it grows. */
    private volatile long[] sentAt = new long[1 << 20];
    /** The highest {@code n} sent; written after its {@link #sentAt} entry. */
    private volatile long highest;
    private volatile boolean stopping;
    private Thread thread;

    SoakStream(String bootstrapServers, String topic, String idPrefix, int repeatPercent) {
        this.bootstrapServers = bootstrapServers;
        this.topic = topic;
        this.idPrefix = idPrefix;
        this.repeatPercent = repeatPercent;
    }

    /** Publishes {@code count} messages as fast as the producer goes, and returns once all are acknowledged. */
    void fill(long count) throws InterruptedException {
        start(0, count);
        thread.join();
        failIfFailed();
    }

    /** Starts publishing {@code ratePerSecond} messages a second until {@link #stop()}. */
    void start(double ratePerSecond) {
        start(ratePerSecond, Long.MAX_VALUE);
    }

    private void start(double ratePerSecond, long count) {
        thread = new Thread(() -> publish(ratePerSecond, count), "soak-stream-" + topic);
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops publishing and waits until everything sent is acknowledged or failed. */
    void stop() throws InterruptedException {
        stopping = true;
        if (thread != null) {
            thread.join();
        }
    }

    private void publish(double ratePerSecond, long count) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, 128 * 1024);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "soak-stream");
        SplittableRandom random = new SplittableRandom(42);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            long start = System.nanoTime();
            long i = 0;
            while (!stopping && i < count) {
                if (ratePerSecond > 0) {
                    long due = start + (long) (i * 1e9 / ratePerSecond);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        // Send what is due, then sleep about a millisecond: cheaper than a park per message.
                        LockSupport.parkNanos(Math.min(wait, TimeUnit.MILLISECONDS.toNanos(1)));
                        continue;
                    }
                }
                long n;
                long top = highest;
                if (top > 500 && random.nextInt(100) < repeatPercent) {
                    n = top - random.nextInt(1, 500);
                    repeats.incrementAndGet();
                } else {
                    n = top + 1;
                    record(n, System.currentTimeMillis());
                }
                String id = idPrefix + "-" + n;
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, null,
                        ("order-" + n).getBytes(StandardCharsets.UTF_8),
                        ("{\"orderId\":\"order-" + n + "\",\"event\":\"paid\",\"amount\":\"10.00\",\"currency\":"
                                + "\"EUR\",\"pad\":\"0123456789\"}").getBytes(StandardCharsets.UTF_8));
                record.headers().add("message-id", id.getBytes(StandardCharsets.UTF_8));
                producer.send(record, (metadata, e) -> {
                    if (e == null) {
                        acknowledged.incrementAndGet();
                    } else {
                        failed.incrementAndGet();
                        firstFailure.compareAndSet(null, e);
                    }
                });
                sent.incrementAndGet();
                i++;
            }
            producer.flush();
        } catch (RuntimeException e) {
            firstFailure.compareAndSet(null, e);
        }
    }

    private void record(long n, long millis) {
        long[] table = sentAt;
        if (n >= table.length) {
            table = Arrays.copyOf(table, (int) Math.min(Integer.MAX_VALUE - 8, Math.max(n + 1, table.length * 2L)));
            sentAt = table;
        }
        table[(int) n] = millis;
        highest = n;
    }

    /** When {@code n} was first sent (epoch milliseconds), or 0 if it was not. */
    long sentAt(long n) {
        long[] table = sentAt;
        return n > 0 && n < table.length && n <= highest ? table[(int) n] : 0;
    }

    /** The highest {@code n} sent: the IDs sent are 1 to this. */
    long highest() {
        return highest;
    }

    long sent() {
        return sent.get();
    }

    long acknowledged() {
        return acknowledged.get();
    }

    long repeats() {
        return repeats.get();
    }

    long failed() {
        return failed.get();
    }

    void failIfFailed() {
        if (firstFailure.get() != null) {
            throw new IllegalStateException("Publishing to '" + topic + "' failed (" + failed.get() + " record(s))",
                    firstFailure.get());
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
