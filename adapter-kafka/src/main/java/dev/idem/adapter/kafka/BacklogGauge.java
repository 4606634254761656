package dev.idem.adapter.kafka;

import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * What the broker still holds for one consumer, per partition, for {@link KafkaSubscription#backlog()}: the end
 * offset (position plus the lag the last fetch reported) minus where the group stands (the last commit, else the
 * first offset handed over, else the position).
 *
 * <p>{@link #refresh} is called on the consumer thread alone, since it asks the consumer; {@link #figures()} by any
 * thread (a metrics thread), which gets the figures published last without waiting.
 */
final class BacklogGauge {

    private static final long EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Consumer-thread state. */
    private long readAt = System.nanoTime() - EVERY_NANOS;
    private volatile Map<String, Long> figures = Map.of();

    /** Consumer thread: reads the figures of {@code partitions} anew, at most once a second. */
    void refresh(KafkaConsumer<byte[], byte[]> consumer, Collection<PartitionState> partitions) {
        long now = System.nanoTime();
        if (now - readAt < EVERY_NANOS) {
            return;
        }
        readAt = now;
        Map<String, Long> read = new TreeMap<>();
        for (PartitionState p : partitions) {
            try {
                OptionalLong lag = consumer.currentLag(p.partition);
                if (lag.isEmpty()) {
                    continue;
                }
                long position = consumer.position(p.partition, Duration.ZERO);
                long from = p.consumedFrom();
                long end = position + lag.getAsLong();
                read.put(Integer.toString(p.partition.partition()), Math.max(0, end - (from >= 0 ? from : position)));
            } catch (RuntimeException unknown) {
                // No position yet (just assigned): the partition is left out until the next read.
            }
        }
        figures = Map.copyOf(read);
    }

    /** Partition number to records the broker holds past where the group stands; an unknown one is left out. */
    Map<String, Long> figures() {
        return figures;
    }
}
