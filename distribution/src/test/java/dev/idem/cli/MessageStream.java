package dev.idem.cli;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A stream of messages the fault ITs publish to Kafka or RocketMQ at a steady rate, so that faults strike while it
 * flows: unique IDs ({@code <prefix><n>}, key {@code order-<n>}, an order-paid payload) and repeats of them (same ID,
 * key and payload). Half the repeats follow their original within a few messages, the other half 2 to 10 seconds
 * later, so they meet a store that already completed the original, possibly in another process. Seeded, so a failure
 * can be replayed. The publisher runs in a thread of its own; every record is acknowledged by the broker
 * ({@code acks=all}, idempotent, on Kafka; stored, on RocketMQ) before {@link #done()} completes normally.
 */
final class MessageStream {

    /** One message and when it is sent, in milliseconds after the start. */
    record Message(String id, String key, byte[] payload, boolean repeat, long sendAtMillis, long lagMillis) {
    }

    private static final long FAR_MIN_MILLIS = 2_000;
    private static final long FAR_MAX_MILLIS = 10_000;

    final List<Message> messages;
    final Set<String> uniqueIds;
    private final AtomicInteger sent = new AtomicInteger();
    private final CompletableFuture<Void> done = new CompletableFuture<>();

    private MessageStream(List<Message> messages, Set<String> uniqueIds) {
        this.messages = messages;
        this.uniqueIds = uniqueIds;
    }

    /**
     * @param count messages in all
     * @param repeatPercent how many of them repeat an earlier one
     * @param ratePerSecond how many are sent per second
     */
    static MessageStream plan(String idPrefix, int count, int repeatPercent, int ratePerSecond, long seed) {
        int repeats = count * repeatPercent / 100;
        int unique = count - repeats;
        double uniquePerSecond = ratePerSecond * (double) unique / count;
        Random random = new Random(seed);
        // The repeats to send right after unique number `after` (0-based), each naming its original.
        List<List<Integer>> repeatsAfter = new ArrayList<>(unique);
        for (int u = 0; u < unique; u++) {
            repeatsAfter.add(new ArrayList<>());
        }
        for (int r = 0; r < repeats; r++) {
            int lag = r % 2 == 0 ? 1 + random.nextInt(20)
                    : (int) Math.ceil(uniquePerSecond
                            * (FAR_MIN_MILLIS + random.nextDouble() * (FAR_MAX_MILLIS - FAR_MIN_MILLIS)) / 1000);
            lag = Math.min(lag, unique - 1);
            int original = random.nextInt(unique - lag);
            repeatsAfter.get(original + lag).add(original);
        }
        List<Message> messages = new ArrayList<>(count);
        long[] sentAt = new long[unique];
        Set<String> ids = new LinkedHashSet<>();
        for (int u = 0; u < unique; u++) {
            sentAt[u] = at(messages.size(), ratePerSecond);
            messages.add(message(idPrefix, u, false, sentAt[u], 0));
            ids.add(idPrefix + (u + 1));
            for (int original : repeatsAfter.get(u)) {
                long when = at(messages.size(), ratePerSecond);
                messages.add(message(idPrefix, original, true, when, when - sentAt[original]));
            }
        }
        return new MessageStream(List.copyOf(messages), Set.copyOf(ids));
    }

    private static long at(int index, int ratePerSecond) {
        return index * 1000L / ratePerSecond;
    }

    private static Message message(String prefix, int u, boolean repeat, long at, long lag) {
        int n = u + 1;
        String payload = "{\"orderId\":\"order-" + n + "\",\"event\":\"paid\",\"amount\":\"10.00\"}";
        return new Message(prefix + n, "order-" + n, payload.getBytes(StandardCharsets.UTF_8), repeat, at, lag);
    }

    long repeats() {
        return messages.stream().filter(Message::repeat).count();
    }

    /** Repeats sent at least two seconds after their original. */
    long repeatsSecondsApart() {
        return messages.stream().filter(m -> m.repeat() && m.lagMillis() >= FAR_MIN_MILLIS).count();
    }

    int sent() {
        return sent.get();
    }

    /** Completes once every message is acknowledged by the broker, or exceptionally with the first failure. */
    CompletableFuture<Void> done() {
        return done;
    }

    /** Starts publishing to {@code topic} in a thread of its own. */
    MessageStream publishToKafka(String bootstrapServers, String topic) {
        return publishing(topic, () -> publish(bootstrapServers, topic));
    }

    /**
     * Starts publishing to {@code topic} of the embedded RocketMQ in a thread of its own, at the same pace: the
     * messages due at once go in one batch, each with its key as {@code KEYS} (the queue its hash picks, so the repeats
     * of an ID follow their original in its queue) and its ID in the {@code message-id} property, stored by the broker
     * before the next batch.
     */
    MessageStream publishToRocketMq(RocketMqProcess rocketMq, String topic) {
        return publishing(topic, () -> {
            long start = System.nanoTime();
            int next = 0;
            while (next < messages.size()) {
                long due = start + TimeUnit.MILLISECONDS.toNanos(messages.get(next).sendAtMillis());
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                List<RocketMqProcess.Message> batch = new ArrayList<>();
                while (next < messages.size() && messages.get(next).sendAtMillis() <= elapsed && batch.size() < 500) {
                    Message m = messages.get(next++);
                    batch.add(new RocketMqProcess.Message(m.key(), m.payload(), Map.of("message-id", m.id())));
                }
                rocketMq.publish(topic, batch);
                sent.addAndGet(batch.size());
            }
        });
    }

    private MessageStream publishing(String topic, Runnable publish) {
        Thread thread = new Thread(() -> {
            try {
                publish.run();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "fault-stream-" + topic);
        thread.setDaemon(true);
        thread.start();
        return this;
    }

    private void publish(String bootstrapServers, String topic) {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.CLIENT_ID_CONFIG, "fault-stream",
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        AtomicReference<Exception> failure = new AtomicReference<>();
        AtomicInteger acknowledged = new AtomicInteger();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
            long start = System.nanoTime();
            for (Message m : messages) {
                long wait = start + TimeUnit.MILLISECONDS.toNanos(m.sendAtMillis()) - System.nanoTime();
                if (wait > 0) {
                    // Pacing: the stream is meant to last, so the faults strike while it flows.
                    LockSupport.parkNanos(wait);
                }
                if (failure.get() != null) {
                    break;
                }
                RecordHeaders headers = new RecordHeaders();
                headers.add("message-id", m.id().getBytes(StandardCharsets.UTF_8));
                producer.send(new ProducerRecord<>(topic, null, m.key().getBytes(StandardCharsets.UTF_8), m.payload(),
                        headers), (metadata, e) -> {
                            if (e != null) {
                                failure.compareAndSet(null, e);
                            } else {
                                acknowledged.incrementAndGet();
                            }
                        });
                sent.incrementAndGet();
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("Publishing to '" + topic + "' failed after " + acknowledged.get()
                    + " acknowledged message(s)", failure.get());
        }
        if (acknowledged.get() != messages.size()) {
            throw new IllegalStateException("The broker acknowledged " + acknowledged.get() + " of " + messages.size()
                    + " message(s) sent to '" + topic + "'");
        }
    }
}
