package dev.idem.adapter.rocketmq;

import dev.idem.adapter.rocketmq.RocketMqDelivery.Settle;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.rocketmq.common.message.Message;

/**
 * One pipeline's consumer, as the runtime and the deliveries see it. Its parts, each with one job:
 * <ul>
 *   <li>{@link ConsumerLoop}, the consumer thread: owns the {@code DefaultLitePullConsumer}; polls, follows the
 *       assignment, pauses and resumes, seeks and commits;
 *   <li>{@link FetchBuffer} and {@link QueueTracker}, confined to the consumer thread: the polled messages waiting for
 *       room, and per message queue the offsets in flight, the offset to commit and the seeks for retries;
 *   <li>{@link Dispatcher}, the dispatcher thread: hands the prepared batches to the listener in order;
 *   <li>{@link SettleQueue}: the settles of the pipeline's threads, queued for the consumer thread;
 *   <li>{@link BacklogGauge}, its own thread: the backlog per queue, for any thread to ask;
 *   <li>{@link Lifecycle}: stopped and closing, which every thread reads.
 * </ul>
 *
 * <p>Thread-safe. {@link #stop()}, {@link #close()} and {@link #backlog()} may be called from any thread (the
 * runtime, a metrics thread, the listener on the dispatcher thread); {@link #settled}, {@link #closed()},
 * {@link #sendDeadLetter} and {@link #deadLetterTopic()} by the threads that settle deliveries; {@link #start()} once,
 * by the thread that subscribes.
 */
final class RocketMqSubscription implements Subscription {

    private final RocketMqSettings settings;
    private final String deadLetterTopic;
    private final RocketMqAdapter adapter;
    private final Lifecycle lifecycle = new Lifecycle();
    private final SettleQueue settles = new SettleQueue();
    private final Dispatcher dispatcher;
    private final ConsumerLoop loop;
    private final BacklogGauge backlog;

    /**
     * @param instanceName the client instance of the subscription's consumer, unique to it
     * @param onClosed called on the consumer thread once its last offsets are committed (its consumer then shuts down
     *        in the background)
     */
    RocketMqSubscription(RocketMqSettings settings, SubscriptionRequest request, Source source, String instanceName,
            String deadLetterTopic, DeliveryListener listener, RocketMqAdapter adapter,
            Consumer<RocketMqSubscription> onClosed) {
        this.settings = settings;
        this.deadLetterTopic = deadLetterTopic;
        this.adapter = adapter;
        this.dispatcher = new Dispatcher(request.pipeline(), listener, lifecycle);
        this.loop = new ConsumerLoop(settings, request, source, instanceName, lifecycle, settles,
                new QueueTracker(request.maxInFlight()), new FetchBuffer(this, request.maxInFlight()), dispatcher,
                () -> onClosed.accept(this));
        this.backlog = new BacklogGauge(request.pipeline(), loop, adapter::maxOffset, lifecycle);
    }

    /**
     * Subscribes and starts the consumer, dispatcher and backlog threads.
     *
     * @throws BrokerException if RocketMQ refuses the subscription
     */
    void start() {
        loop.start();
        dispatcher.start();
        backlog.start();
    }

    String deadLetterTopic() {
        return deadLetterTopic;
    }

    boolean closed() {
        return lifecycle.closing();
    }

    void sendDeadLetter(Message copy) {
        adapter.send(copy, null, "dead-letter copy to '" + copy.getTopic() + "'");
    }

    /** Called once per delivery by the settling thread. */
    void settled(RocketMqDelivery delivery, Settle.Kind kind, Duration delay) {
        settles.settledOne();
        if (lifecycle.closing() || delivery.queue.revoked) {
            return;
        }
        settles.add(new Settle(delivery, kind, delay.toNanos()));
    }

    @Override
    public Map<String, Long> backlog() {
        return backlog.figures();
    }

    @Override
    public void stop() {
        lifecycle.stop();
    }

    @Override
    public void close() {
        lifecycle.close();
        if (!loop.runsOnCurrentThread()) {
            try {
                loop.join(settings.commitInterval().plusSeconds(30).toMillis());
                if (!dispatcher.runsOnCurrentThread()) {
                    dispatcher.join(5_000);
                }
                backlog.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
