package dev.idem.adapter.kafka;

import dev.idem.spi.Delivery;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import org.apache.kafka.common.TopicPartition;

/**
 * What one consumer knows about one assigned partition: the records handed over and not yet committed, in
 * offset order, and whether the partition waits to be sought back for a retry.
 *
 * <p>Confined to the subscription's consumer thread, except {@link #revoked}, which settling threads read.
 * A new assignment of the same partition gets a new instance, so a delivery of an old assignment never
 * settles a record of a newer one. {@link #epoch} grows on every decision to seek back; a retry from a
 * delivery that has since been delivered again is stale and ignored (the newer delivery settles it), and
 * fetched records buffered before the decision are dropped (they come again after the seek).
 */
final class PartitionState {

    enum SlotState { IN_FLIGHT, RETRY, DONE }

    /** One handed-over offset: its state and how often it was delivered in this assignment. */
    static final class Slot {
        final long offset;
        SlotState state;
        int deliveries;
        int epoch;
        /** The delivery handed over last for it (consumer thread only). */
        Delivery delivery;

        Slot(long offset) {
            this.offset = offset;
        }
    }

    final TopicPartition partition;
    /** The partition as the runtime sees it: {@code topic-3}. */
    final String name;
    /** Handed-over offsets from the lowest unfinished one on, ascending. */
    private final LinkedHashMap<Long, Slot> slots = new LinkedHashMap<>();
    /** The offset to commit: after the highest contiguous finished one; -1 before any finished. */
    private long next = -1;
    private long committed = -1;
    /** The first offset handed over since the assignment; -1 before. */
    private long firstDelivered = -1;
    private int inFlight;
    int epoch;
    volatile boolean revoked;
    private boolean retryPending;
    private long retryAtNanos;
    private long seekTo = Long.MAX_VALUE;

    PartitionState(TopicPartition partition) {
        this.partition = partition;
        this.name = partition.topic() + "-" + partition.partition();
    }

    /**
     * Records that {@code offset} is handed over now.
     *
     * @return its slot, or {@code null} when it is already finished and must not be handed over again
     */
    Slot deliver(long offset) {
        if (next >= 0 && offset < next) {
            return null;
        }
        if (firstDelivered < 0 || offset < firstDelivered) {
            firstDelivered = offset;
        }
        Slot slot = slots.get(offset);
        if (slot == null) {
            slot = new Slot(offset);
            slots.put(offset, slot);
        } else if (slot.state == SlotState.DONE) {
            return null;
        }
        if (slot.state != SlotState.IN_FLIGHT) {
            inFlight++;
        }
        slot.state = SlotState.IN_FLIGHT;
        slot.deliveries++;
        slot.epoch = epoch;
        return slot;
    }

    /** The record is finished (acked or dead-lettered), by any delivery of this assignment. */
    void finish(Slot slot) {
        if (slot.state == SlotState.DONE) {
            return;
        }
        if (slot.state == SlotState.IN_FLIGHT) {
            inFlight--;
        }
        slot.state = SlotState.DONE;
        Iterator<Slot> it = slots.values().iterator();
        while (it.hasNext()) {
            Slot first = it.next();
            if (first.state != SlotState.DONE) {
                break;
            }
            next = first.offset + 1;
            it.remove();
        }
    }

    /**
     * The record is to be delivered again, not before {@code nowNanos + delayNanos}. Ignored when a newer
     * delivery of it exists (that one settles it) or it is finished.
     */
    void retry(Slot slot, int deliveryEpoch, long nowNanos, long delayNanos) {
        if (slot.state != SlotState.IN_FLIGHT || slot.epoch != deliveryEpoch) {
            return;
        }
        inFlight--;
        slot.state = SlotState.RETRY;
        seekTo = Math.min(seekTo, slot.offset);
        long at = nowNanos + Math.max(0, delayNanos);
        if (!retryPending) {
            retryPending = true;
            retryAtNanos = at;
            epoch++;
        } else if (at - retryAtNanos > 0) {
            retryAtNanos = at;
        }
    }

    /** Whether the partition must stay paused: it waits to be sought back. */
    boolean retryPending() {
        return retryPending;
    }

    /** Nanoseconds until the seek is due (0 or less: due); only meaningful while {@link #retryPending()}. */
    long nanosUntilSeek(long nowNanos) {
        return retryAtNanos - nowNanos;
    }

    /** The offset to seek to; call {@link #sought()} once done. */
    long seekTo() {
        return seekTo;
    }

    void sought() {
        retryPending = false;
        seekTo = Long.MAX_VALUE;
        epoch++;
    }

    /** Adds the deliveries handed over and neither finished nor handed back to {@code out}. */
    void inFlightDeliveries(List<Delivery> out) {
        for (Slot slot : slots.values()) {
            if (slot.state == SlotState.IN_FLIGHT && slot.delivery != null) {
                out.add(slot.delivery);
            }
        }
    }

    /** Handed over and neither finished nor handed back. */
    int inFlight() {
        return inFlight;
    }

    /** Offsets held: unfinished ones and finished ones behind them. */
    int held() {
        return slots.size();
    }

    /** The offset to commit if it moved since the last commit, else -1. */
    long committable() {
        return next > committed ? next : -1;
    }

    void committed(long offset) {
        committed = Math.max(committed, offset);
    }

    /** Where the group stands for this consumer: its last commit, else the first offset handed over; -1 if neither. */
    long consumedFrom() {
        return committed >= 0 ? committed : firstDelivered;
    }
}
