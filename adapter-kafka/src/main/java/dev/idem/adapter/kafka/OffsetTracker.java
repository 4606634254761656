package dev.idem.adapter.kafka;

import dev.idem.adapter.kafka.KafkaDelivery.Settle;
import dev.idem.spi.Delivery;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The offsets of the partitions one consumer owns, one {@link PartitionState} each: the settles applied to them,
 * what is due to be committed (the offset after the highest contiguous finished one), which partitions must be
 * sought back for a retry and when, and which must not fetch for now.
 *
 * <p>Confined to the consumer thread (the run loop and the rebalance callbacks it runs inside {@code poll} and
 * {@code close}); it never touches the {@code KafkaConsumer}, whose seeks and commits stay with
 * {@link ConsumerLoop}.
 */
final class OffsetTracker {

    private final Map<TopicPartition, PartitionState> partitions = new HashMap<>();
    /**
     * A partition holding this many offsets (finished ones behind an unfinished one) stops fetching, which bounds
     * the memory and the redelivery after a crash.
     */
    private final int maxHeldPerPartition;

    OffsetTracker(int maxInFlight) {
        this.maxHeldPerPartition = Math.max(10_000, 10 * maxInFlight);
    }

    /** The state of an owned partition, or {@code null} when this consumer does not own it (any more). */
    PartitionState get(TopicPartition tp) {
        return partitions.get(tp);
    }

    /** The partitions owned now; a live view. */
    Set<TopicPartition> owned() {
        return partitions.keySet();
    }

    /** The states of the partitions owned now; a live view. */
    Collection<PartitionState> states() {
        return partitions.values();
    }

    /** Starts tracking {@code assigned}; a partition tracked already keeps its state. */
    void assigned(Collection<TopicPartition> assigned) {
        for (TopicPartition tp : assigned) {
            partitions.computeIfAbsent(tp, PartitionState::new);
        }
    }

    /**
     * Stops tracking {@code gone} and marks their states revoked, so that their deliveries settle nothing and their
     * buffered records are dropped.
     */
    void forget(Collection<TopicPartition> gone) {
        for (TopicPartition tp : gone) {
            PartitionState p = partitions.remove(tp);
            if (p != null) {
                p.revoked = true;
            }
        }
    }

    /** Stops tracking every partition, as {@link #forget} does, once the consumer is closed. */
    void forgetAll() {
        for (PartitionState p : partitions.values()) {
            p.revoked = true;
        }
        partitions.clear();
    }

    /** Applies one settle to its partition; ignored when the partition was revoked or assigned anew since. */
    void apply(Settle s) {
        KafkaDelivery d = s.delivery();
        PartitionState p = d.partition;
        if (p.revoked || partitions.get(p.partition) != p) {
            return;
        }
        if (s.kind() == Settle.Kind.ACK) {
            p.finish(d.slot);
        } else {
            p.retry(d.slot, d.epoch, System.nanoTime(), s.delayNanos());
        }
    }

    /** Nanoseconds until the first seek for a retry is due (0 if one is due now), at most {@code atMost}. */
    long nanosUntilSeek(long nowNanos, long atMost) {
        long nanos = atMost;
        for (PartitionState p : partitions.values()) {
            if (p.retryPending()) {
                nanos = Math.min(nanos, Math.max(0, p.nanosUntilSeek(nowNanos)));
            }
        }
        return nanos;
    }

    /** Gives each partition whose retry is due to {@code seek} with the offset to seek to, then records it sought. */
    void seekDueRetries(long nowNanos, BiConsumer<TopicPartition, Long> seek) {
        for (PartitionState p : partitions.values()) {
            if (p.retryPending() && p.nanosUntilSeek(nowNanos) <= 0) {
                seek.accept(p.partition, p.seekTo());
                p.sought();
            }
        }
    }

    /** The owned partitions that must not fetch for now: a retry waits to be sought, or they hold too many offsets. */
    Set<TopicPartition> mustWait() {
        Set<TopicPartition> waiting = new HashSet<>();
        for (PartitionState p : partitions.values()) {
            if (p.retryPending() || p.held() >= maxHeldPerPartition) {
                waiting.add(p.partition);
            }
        }
        return waiting;
    }

    /** The offsets of {@code of} to commit: those that moved since their last commit; others are left out. */
    Map<TopicPartition, OffsetAndMetadata> committable(Collection<TopicPartition> of) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : of) {
            PartitionState p = partitions.get(tp);
            long offset = p == null ? -1 : p.committable();
            if (offset >= 0) {
                offsets.put(tp, new OffsetAndMetadata(offset));
            }
        }
        return offsets;
    }

    /** Records a successful commit; partitions no longer owned are left out. */
    void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
        offsets.forEach((tp, o) -> {
            PartitionState p = partitions.get(tp);
            if (p != null) {
                p.committed(o.offset());
            }
        });
    }

    /** The deliveries of {@code of} handed over and neither finished nor handed back. */
    List<Delivery> inFlightDeliveries(Collection<TopicPartition> of) {
        List<Delivery> out = new ArrayList<>();
        for (TopicPartition tp : of) {
            PartitionState p = partitions.get(tp);
            if (p != null) {
                p.inFlightDeliveries(out);
            }
        }
        return out;
    }

    /** Deliveries of {@code of} handed over and neither finished nor handed back. */
    int inFlight(Collection<TopicPartition> of) {
        int n = 0;
        for (TopicPartition tp : of) {
            PartitionState p = partitions.get(tp);
            n += p == null ? 0 : p.inFlight();
        }
        return n;
    }
}
