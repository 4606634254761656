package dev.idem.adapter.kafka;

import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * One handed-over record. Settling only queues the outcome for the consumer thread (KafkaConsumer is not
 * thread-safe), except the dead-letter copy, which is produced and awaited on the caller's thread first.
 * Thread-safe; the first settle wins, later ones are ignored.
 */
final class KafkaDelivery implements Delivery {

    private static final byte[] EMPTY = new byte[0];

    private final KafkaSubscription subscription;
    private final ConsumerRecord<byte[], byte[]> record;
    final PartitionState partition;
    final PartitionState.Slot slot;
    final int epoch;
    private final InboundMessage message;
    private final AtomicBoolean settled = new AtomicBoolean();

    KafkaDelivery(KafkaSubscription subscription, ConsumerRecord<byte[], byte[]> record, PartitionState partition,
            PartitionState.Slot slot) {
        this.subscription = subscription;
        this.record = record;
        this.partition = partition;
        this.slot = slot;
        this.epoch = slot.epoch;
        int deliveries = slot.deliveries;
        String key = record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8);
        this.message = new InboundMessage(record.topic(), partition.name, key, new KafkaHeaderMap(record.headers()),
                record.value() == null ? EMPTY : record.value(), partition.name + "-" + record.offset(),
                deliveries > 1, deliveries, key, KafkaAdapter.replyAddress(record.headers()));
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
     * Produces the copy and waits for the broker's acknowledgement, then acks. A delivery of a revoked
     * partition or closed subscription produces nothing: its new owner handles the record.
     *
     * @throws BrokerException if the copy was not acknowledged; the delivery then stays unsettled
     */
    @Override
    public void deadLetter(DeadLetterReason reason) {
        Objects.requireNonNull(reason, "reason");
        if (!settled.compareAndSet(false, true)) {
            return;
        }
        if (!partition.revoked && !subscription.closed()) {
            try {
                subscription.produceDeadLetter(copy(reason));
            } catch (RuntimeException e) {
                settled.set(false);
                throw e;
            }
        }
        subscription.settled(this, Settle.Kind.ACK, Duration.ZERO);
    }

    private ProducerRecord<byte[], byte[]> copy(DeadLetterReason reason) {
        RecordHeaders headers = new RecordHeaders(record.headers().toArray());
        for (Map.Entry<String, String> h : reason.toHeaders().entrySet()) {
            headers.remove(h.getKey());
            headers.add(h.getKey(), KafkaAdapter.utf8(h.getValue()));
        }
        origin(headers, DeadLetterReason.ORIGIN_SOURCE, record.topic());
        origin(headers, DeadLetterReason.ORIGIN_PARTITION, Integer.toString(record.partition()));
        origin(headers, DeadLetterReason.ORIGIN_OFFSET, Long.toString(record.offset()));
        origin(headers, DeadLetterReason.ORIGIN_MESSAGE_ID, message.brokerMessageId());
        return new ProducerRecord<>(subscription.deadLetterTopic(), null, record.key(), record.value(), headers);
    }

    private static void origin(RecordHeaders headers, String name, String value) {
        headers.remove(name);
        headers.add(name, KafkaAdapter.utf8(value));
    }

    /** An outcome queued for the consumer thread. */
    record Settle(KafkaDelivery delivery, Kind kind, long delayNanos) {
        enum Kind { ACK, RETRY }
    }
}
