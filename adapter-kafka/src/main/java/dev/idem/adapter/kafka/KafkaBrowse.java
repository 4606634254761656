package dev.idem.adapter.kafka;

import dev.idem.spi.BrokerException;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.InboundMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * One browse of a topic ({@link KafkaAdapter#browse}): the admin client tells each partition's range (from the
 * reader group's committed offset, or the earliest, to the end), and a consumer without a group reads it by
 * {@code assign} and {@code seek}. It never joins a group and never commits, so no reader's position moves.
 */
final class KafkaBrowse {

    private static final byte[] EMPTY = new byte[0];
    private static final Duration POLL = Duration.ofMillis(200);

    private final KafkaSettings settings;
    private final Admin admin;
    private final Duration timeout;

    KafkaBrowse(KafkaSettings settings, Admin admin, Duration timeout) {
        this.settings = settings;
        this.admin = admin;
        this.timeout = timeout;
    }

    List<BrowsedMessage> read(String topic, String reader, int max) {
        try {
            Map<TopicPartition, long[]> ranges = ranges(topic, reader);
            List<BrowsedMessage> out = new ArrayList<>();
            if (ranges.isEmpty()) {
                return out;
            }
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumer())) {
                List<TopicPartition> partitions = new ArrayList<>(ranges.keySet());
                partitions.sort(Comparator.comparingInt(TopicPartition::partition));
                for (TopicPartition tp : partitions) {
                    long[] range = ranges.get(tp);
                    if (out.size() < max && range[0] < range[1]) {
                        readPartition(consumer, tp, range[0], Math.min(range[1], range[0] + max - out.size()), out);
                    }
                }
            }
            return out;
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            throw new BrokerException("Kafka at " + settings.common().get("bootstrap.servers")
                    + " could not be browsed for topic '" + topic + "' within " + ConfigKey.formatDuration(timeout)
                    + ": " + cause.getMessage(), true, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while browsing topic '" + topic + "'", true, e);
        }
    }

    /** Each partition's {start, end}: from the reader's committed offset (else the earliest) to the end. */
    private Map<TopicPartition, long[]> ranges(String topic, String reader)
            throws ExecutionException, TimeoutException, InterruptedException {
        return GroupRanges.read(admin, topic, settings.groupId(reader), timeout.toMillis()).orElse(Map.of());
    }

    /** Reads offsets {@code [from, to)} of one partition; stops early when nothing comes within the timeout. */
    private void readPartition(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp, long from, long to,
            List<BrowsedMessage> out) {
        consumer.assign(List.of(tp));
        consumer.seek(tp, from);
        String partition = tp.topic() + "-" + tp.partition();
        long deadline = System.nanoTime() + timeout.toNanos();
        long next = from;
        while (next < to && System.nanoTime() - deadline < 0) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL).records(tp)) {
                if (r.offset() >= to) {
                    return;
                }
                next = r.offset() + 1;
                out.add(new BrowsedMessage(partition + "-" + r.offset(), message(r, partition)));
            }
            // A transaction marker or a compacted record leaves a gap: the consumer's position still passes it.
            next = Math.max(next, consumer.position(tp));
        }
    }

    private static InboundMessage message(ConsumerRecord<byte[], byte[]> r, String partition) {
        String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
        return new InboundMessage(r.topic(), partition, key, new KafkaHeaderMap(r.headers()),
                r.value() == null ? EMPTY : r.value(), partition + "-" + r.offset(), false, 0, key,
                KafkaAdapter.replyAddress(r.headers()));
    }

    /** A consumer of no group: {@code assign} only, nothing committed, nothing joined. */
    private Map<String, Object> consumer() {
        Map<String, Object> p = settings.consumer("browse", 500, null);
        p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        p.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        p.remove(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-browse");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        return p;
    }
}
