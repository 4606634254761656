package dev.idem.adapter.rocketmq;

import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One handed-over message. Settling only queues the outcome for the consumer thread (the offsets and seeks are that
 * thread's), except the dead-letter copy, which is sent and confirmed on the caller's thread first. Thread-safe; the
 * first settle wins, later ones are ignored.
 */
final class RocketMqDelivery implements Delivery {

    private final RocketMqSubscription subscription;
    private final MessageExt original;
    final QueueState queue;
    final QueueState.Slot slot;
    final int epoch;
    private final InboundMessage message;
    private final AtomicBoolean settled = new AtomicBoolean();

    RocketMqDelivery(RocketMqSubscription subscription, MessageExt original, QueueState queue, QueueState.Slot slot) {
        this.subscription = subscription;
        this.original = original;
        this.queue = queue;
        this.slot = slot;
        this.epoch = slot.epoch;
        // A message RocketMQ itself redelivered from a %RETRY% topic (another client sent it back) counts those too.
        int deliveries = Math.max(slot.deliveries, original.getReconsumeTimes() + 1);
        this.message = Messages.inbound(original, queue.name, deliveries);
    }

    @Override
    public InboundMessage message() {
        return message;
    }

    @Override
    public void ack() {
        if (settled.compareAndSet(false, true)) {
            subscription.settled(this, Settle.Kind.ACK, Duration.ZERO);
        }
    }

    @Override
    public void retryLater(Duration delay) {
        Objects.requireNonNull(delay, "delay");
        if (settled.compareAndSet(false, true)) {
            subscription.settled(this, Settle.Kind.RETRY, delay);
        }
    }

    /**
     * Sends the copy and waits for the broker's {@code SEND_OK}, then acks. A delivery of a revoked queue or closed
     * subscription sends nothing: the queue's new owner handles the message.
     *
     * @throws BrokerException if the copy was not confirmed; the delivery then stays unsettled
     */
    @Override
    public void deadLetter(DeadLetterReason reason) {
        Objects.requireNonNull(reason, "reason");
        if (!settled.compareAndSet(false, true)) {
            return;
        }
        if (!queue.revoked && !subscription.closed()) {
            try {
                subscription.sendDeadLetter(Messages.deadLetterCopy(original, subscription.deadLetterTopic(),
                        queue.name, reason, message.brokerMessageId()));
            } catch (RuntimeException e) {
                settled.set(false);
                throw e;
            }
        }
        subscription.settled(this, Settle.Kind.ACK, Duration.ZERO);
    }

    /** An outcome queued for the consumer thread. */
    record Settle(RocketMqDelivery delivery, Kind kind, long delayNanos) {
        enum Kind { ACK, RETRY }
    }
}
