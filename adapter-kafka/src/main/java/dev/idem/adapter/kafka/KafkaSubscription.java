package dev.idem.adapter.kafka;

import dev.idem.adapter.kafka.KafkaDelivery.Settle;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pipeline's consumer, as the runtime and the deliveries see it. Its parts, each with one job:
 * <ul>
 *   <li>{@link ConsumerLoop}, the consumer thread: owns the {@code KafkaConsumer}; polls, pauses and resumes,
 *       seeks, commits and serves rebalances;
 *   <li>{@link FetchBuffer} and {@link OffsetTracker}, confined to the consumer thread: the fetched records waiting
 *       for room, and per partition the offsets in flight, the offset to commit and the seeks for retries;
 *   <li>{@link Dispatcher}, the dispatcher thread: hands the prepared batches to the listener in order;
 *   <li>{@link SettleQueue}: the settles of the pipeline's threads, queued for the consumer thread;
 *   <li>{@link BacklogGauge}: the backlog figures the consumer thread reads, for any thread to ask;
 *   <li>{@link Lifecycle}: stopped and closing, which every thread reads.
 * </ul>
 *
 * <p>Thread-safe. {@link #stop()}, {@link #close()} and {@link #backlog()} may be called from any thread (the
 * runtime, a metrics thread, the listener on the dispatcher thread); {@link #settled}, {@link #closed()},
 * {@link #produceDeadLetter} and {@link #deadLetterTopic()} by the threads that settle deliveries;
 * {@link #start()} once, by the thread that subscribes.
 */
final class KafkaSubscription implements Subscription {

    private static final Logger log = LoggerFactory.getLogger(KafkaSubscription.class);

    private final KafkaSettings settings;
    private final SubscriptionRequest request;
    /** This consumer's {@code group.instance.id}; {@code null} for a dynamic member. */
    private final String groupInstanceId;
    private final String deadLetterTopic;
    private final KafkaAdapter adapter;
    private final Lifecycle lifecycle = new Lifecycle();
    private final SettleQueue settles = new SettleQueue();
    private final Dispatcher dispatcher;
    private final ConsumerLoop loop;

    /**
     * @param groupInstanceId the consumer's {@code group.instance.id}, or {@code null} for a dynamic member
     * @param onClosed called on the consumer thread once its consumer is closed
     * @throws BrokerException if kafka-clients rejects the consumer's settings
     */
    KafkaSubscription(KafkaSettings settings, SubscriptionRequest request, String groupInstanceId,
            String deadLetterTopic, DeliveryListener listener, KafkaAdapter adapter,
            Consumer<KafkaSubscription> onClosed) {
        this.settings = settings;
        this.request = request;
        this.groupInstanceId = groupInstanceId;
        this.deadLetterTopic = deadLetterTopic;
        this.adapter = adapter;
        this.dispatcher = new Dispatcher(request.pipeline(), listener, lifecycle);
        this.loop = new ConsumerLoop(settings, request, groupInstanceId, adapter, lifecycle, settles,
                new OffsetTracker(request.maxInFlight()), new FetchBuffer(this, request.maxInFlight()), dispatcher,
                () -> onClosed.accept(this));
    }

    /**
     * Subscribes and starts the consumer and dispatcher threads.
     *
     * @throws BrokerException if Kafka refuses the subscription
     */
    void start() {
        loop.start();
        dispatcher.start();
        if (groupInstanceId != null) {
            log.info("Pipeline '{}' consumes '{}' in group '{}' as static member '{}'", request.pipeline(),
                    request.source(), settings.groupId(request.pipeline()), groupInstanceId);
        }
    }

    String pipeline() {
        return request.pipeline();
    }

    String groupInstanceId() {
        return groupInstanceId;
    }

    String deadLetterTopic() {
        return deadLetterTopic;
    }

    boolean closed() {
        return lifecycle.closing();
    }

    void produceDeadLetter(ProducerRecord<byte[], byte[]> copy) {
        adapter.send(copy, "dead-letter copy to '" + copy.topic() + "'");
    }

    /** Called once per delivery by the settling thread. */
    void settled(KafkaDelivery delivery, Settle.Kind kind, Duration delay) {
        if (lifecycle.closing() || delivery.partition.revoked) {
            settles.settled(null);
            return;
        }
        settles.settled(new Settle(delivery, kind, delay.toNanos()));
        if (kind == Settle.Kind.RETRY) {
            // A retry must not wait out a long idle poll; the consumer thread tolerates stray wakeups.
            loop.wakeupIfPolling();
        }
    }

    @Override
    public Map<String, Long> backlog() {
        return loop.backlog();
    }

    @Override
    public void stop() {
        lifecycle.stop();
    }

    @Override
    public void close() {
        lifecycle.close();
        loop.wakeup();
        if (!loop.runsOnCurrentThread() && !dispatcher.runsOnCurrentThread()) {
            try {
                loop.join(settings.revokeTimeout().plusSeconds(30).toMillis());
                dispatcher.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
