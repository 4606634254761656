package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Envelope;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.spi.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A subscription to one queue: {@code consumers} workers, each with its own channel. Thread-safe.
 */
final class RabbitMqSubscription implements Subscription, RabbitDelivery.Settler {

    /**
     * The largest batch handed over at once. Small enough that the pipeline starts on the first deliveries
     * while the broker's next ones arrive (500 measured slower end to end), large enough to batch store claims.
     */
    private static final int MAX_BATCH = 100;

    private final SubscriptionRequest request;
    private final RabbitMqAdapter adapter;
    private final ScheduledExecutorService scheduler;
    private final String deadLetterQueue;
    private final List<ConsumerWorker> workers = new ArrayList<>();
    private boolean stopped;
    private boolean closed;

    /**
     * @param topology what to declare for the queue and its dead-letter queue: the configured topology for a
     *        pipeline's source, {@link Topology#NONE} for a dead-letter queue read as it is
     * @throws BrokerException if the queue cannot be declared or consumed
     */
    RabbitMqSubscription(SubscriptionRequest request, DeliveryListener listener, RabbitMqAdapter adapter,
            ScheduledExecutorService scheduler, Topology topology) {
        this.request = request;
        this.adapter = adapter;
        this.scheduler = scheduler;
        this.deadLetterQueue = request.deadLetterDestination() != null
                ? request.deadLetterDestination() : defaultDeadLetterQueue(request.source());
        RabbitMqSettings settings = adapter.settings();
        int prefetch = settings.prefetchFor(request.maxInFlight());
        adapter.declareDeadLetterQueue(topology, deadLetterQueue);
        ChannelSession.DeliveryFactory deliveries = this::delivery;
        try {
            for (int i = 0; i < settings.consumers(); i++) {
                workers.add(new ConsumerWorker("idem-rabbitmq-" + request.pipeline() + "-" + i,
                        () -> ChannelSession.open(adapter.consumingConnection(), request.source(), prefetch, topology,
                                deliveries),
                        listener, Math.min(prefetch, MAX_BATCH)));
            }
        } catch (RuntimeException e) {
            workers.forEach(ConsumerWorker::close);
            throw e;
        }
        workers.forEach(ConsumerWorker::start);
    }

    /** Where the dead letters of {@code queue} go when the pipeline names no queue for them. */
    static String defaultDeadLetterQueue(String queue) {
        return queue + ".DLQ";
    }

    private RabbitDelivery delivery(ChannelSession session, long tag, Envelope envelope, AMQP.BasicProperties props,
            byte[] body) {
        return new RabbitDelivery(session, tag, Messages.inbound(request.source(), envelope, props, body), props, this);
    }

    @Override
    public void requeueAfter(Duration delay, Runnable requeue) {
        Runnable guarded = () -> {
            try {
                requeue.run();
            } catch (BrokerException e) {
                // Not told, the broker still requeues the message once the channel closes.
                RabbitMqAdapter.log.warn("Could not requeue a delayed retry of queue '{}': {}", request.source(),
                        e.getMessage());
            }
        };
        try {
            scheduler.schedule(guarded, delay.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            // The adapter has closed, and its channels with it: the broker has requeued the message already.
        }
    }

    @Override
    public String deadLetterQueue() {
        return deadLetterQueue;
    }

    @Override
    public void publishDeadLetter(String queue, AMQP.BasicProperties props, byte[] body) {
        adapter.publisher().publish(queue, props, body);
    }

    /**
     * The queue's ready messages, asked of the broker on a channel of its own (a passive declare); empty when
     * the broker cannot be asked.
     */
    @Override
    public Map<String, Long> backlog() {
        try (Channel channel = adapter.consumingConnection().createChannel()) {
            return Map.of(request.source(), channel.messageCount(request.source()));
        } catch (Exception e) {
            return Map.of();
        }
    }

    @Override
    public synchronized void stop() {
        if (!stopped) {
            stopped = true;
            workers.forEach(ConsumerWorker::stop);
        }
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            stop();
            workers.forEach(ConsumerWorker::close);
            adapter.forget(this);
        }
    }
}
