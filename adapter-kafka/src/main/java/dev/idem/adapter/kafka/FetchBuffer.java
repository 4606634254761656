package dev.idem.adapter.kafka;

import dev.idem.spi.Delivery;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Fetched records waiting until the pipeline has room for them, and the batches cut from them: a batch goes once
 * the room holds a quarter of {@code maxInFlight} or all that wait, so the pipeline gets fewer, larger batches.
 *
 * <p>Confined to the consumer thread.
 */
final class FetchBuffer {

    private record Pending(ConsumerRecord<byte[], byte[]> record, PartitionState partition, int epoch) {
    }

    /** The handle each delivery carries to settle through. */
    private final KafkaSubscription subscription;
    /** The smallest batch worth handing over while records wait: fewer, larger batches for the pipeline. */
    private final int minBatch;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();

    FetchBuffer(KafkaSubscription subscription, int maxInFlight) {
        this.subscription = subscription;
        this.minBatch = Math.max(1, maxInFlight / 4);
    }

    /** Buffers a fetched record of {@code partition}, as of the partition's current epoch. */
    void add(ConsumerRecord<byte[], byte[]> record, PartitionState partition) {
        pending.addLast(new Pending(record, partition, partition.epoch));
    }

    /**
     * Cuts the next batch for a pipeline with room for {@code room} deliveries, recording each record as handed
     * over in its partition. Records of revoked partitions, records buffered before a seek back (they come again)
     * and records finished already are dropped.
     *
     * @return the batch; empty when there is too little room or nothing left to hand over
     */
    List<Delivery> takeBatch(int room) {
        if (pending.isEmpty() || room < roomNeeded()) {
            return List.of();
        }
        List<Delivery> batch = new ArrayList<>(Math.min(room, pending.size()));
        while (batch.size() < room && !pending.isEmpty()) {
            Pending next = pending.pollFirst();
            PartitionState p = next.partition();
            if (p.revoked || next.epoch() != p.epoch) {
                continue;
            }
            PartitionState.Slot slot = p.deliver(next.record().offset());
            if (slot != null) {
                KafkaDelivery delivery = new KafkaDelivery(subscription, next.record(), p, slot);
                slot.delivery = delivery;
                batch.add(delivery);
            }
        }
        return batch;
    }

    /** The room {@link #takeBatch} needs to hand a batch over: a quarter of {@code maxInFlight}, or all that wait. */
    int roomNeeded() {
        return Math.min(pending.size(), minBatch);
    }

    boolean isEmpty() {
        return pending.isEmpty();
    }

    int size() {
        return pending.size();
    }

    /** Drops the records of partitions revoked since they were buffered. */
    void dropRevoked() {
        pending.removeIf(p -> p.partition().revoked);
    }

    void clear() {
        pending.clear();
    }
}
