package dev.idem.adapter.rocketmq;

import dev.idem.spi.Delivery;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Polled messages waiting until the pipeline has room for them, and the batches cut from them: a batch goes once the
 * room holds a quarter of {@code maxInFlight} or all that wait, so the pipeline gets fewer, larger batches.
 *
 * <p>Confined to the consumer thread.
 */
final class FetchBuffer {

    private record Pending(MessageExt message, QueueState queue, int epoch) {
    }

    /** The handle each delivery carries to settle through. */
    private final RocketMqSubscription subscription;
    /** The smallest batch worth handing over while messages wait: fewer, larger batches for the pipeline. */
    private final int minBatch;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();

    FetchBuffer(RocketMqSubscription subscription, int maxInFlight) {
        this.subscription = subscription;
        this.minBatch = Math.max(1, maxInFlight / 4);
    }

    /** Buffers a polled message of {@code queue}, as of the queue's current epoch. */
    void add(MessageExt message, QueueState queue) {
        pending.addLast(new Pending(message, queue, queue.epoch));
    }

    /**
     * Cuts the next batch for a pipeline with room for {@code room} deliveries, recording each message as handed over
     * in its queue. Messages of revoked queues, messages buffered before a seek back (they come again) and messages
     * finished already are dropped.
     *
     * @return the batch; empty when there is too little room or nothing left to hand over
     */
    List<Delivery> takeBatch(int room) {
        if (pending.isEmpty() || room < Math.min(pending.size(), minBatch)) {
            return List.of();
        }
        List<Delivery> batch = new ArrayList<>(Math.min(room, pending.size()));
        while (batch.size() < room && !pending.isEmpty()) {
            Pending next = pending.pollFirst();
            QueueState q = next.queue();
            if (q.revoked || next.epoch() != q.epoch) {
                continue;
            }
            QueueState.Slot slot = q.deliver(next.message().getQueueOffset());
            if (slot != null) {
                RocketMqDelivery delivery = new RocketMqDelivery(subscription, next.message(), q, slot);
                slot.delivery = delivery;
                batch.add(delivery);
            }
        }
        return batch;
    }

    boolean isEmpty() {
        return pending.isEmpty();
    }

    int size() {
        return pending.size();
    }

    /** Drops the messages of queues revoked since they were buffered. */
    void dropRevoked() {
        pending.removeIf(p -> p.queue().revoked);
    }

    void clear() {
        pending.clear();
    }
}
