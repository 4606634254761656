package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.spi.Backlog;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The RabbitMQ adapter: a consuming connection shared by the subscriptions' channels and a publishing
 * connection with one confirm channel. See {@link RabbitMqAdapterProvider} for the semantics. Thread-safe.
 */
final class RabbitMqAdapter implements BrokerAdapter, DeadLetterBrowser {

    static final Logger log = LoggerFactory.getLogger(RabbitMqAdapter.class);

    private final RabbitMqSettings settings;
    private final Connector consuming;
    private final Connector publishing;
    private final Publisher publisher;
    private final ScheduledExecutorService scheduler;
    private final Set<RabbitMqSubscription> subscriptions = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private RabbitMqAdapter(RabbitMqSettings settings) {
        this.settings = settings;
        this.consuming = new Connector(settings.factory(), settings.connectionName() + "-consume", settings.endpoint());
        this.publishing = new Connector(settings.factory(), settings.connectionName() + "-publish",
                settings.endpoint());
        this.publisher = new Publisher(publishing);
        this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idem-rabbitmq-retry-" + settings.connectionName());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Opens both connections.
     *
     * @throws BrokerException if RabbitMQ cannot be reached or refuses the login
     */
    static RabbitMqAdapter open(RabbitMqSettings settings) {
        RabbitMqAdapter adapter = new RabbitMqAdapter(settings);
        try {
            adapter.consuming.get();
            adapter.publishing.get();
            return adapter;
        } catch (RuntimeException e) {
            adapter.close();
            throw e;
        }
    }

    RabbitMqSettings settings() {
        return settings;
    }

    Connection consumingConnection() {
        return consuming.get();
    }

    Publisher publisher() {
        return publisher;
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (closed) {
            throw new BrokerException("The RabbitMQ adapter is closed", false);
        }
        RabbitMqSubscription subscription = new RabbitMqSubscription(request, listener, this, scheduler,
                Topology.of(settings));
        subscriptions.add(subscription);
        log.info("Consuming RabbitMQ queue '{}' at {} for pipeline '{}' ({} channel(s), prefetch {} each)",
                request.source(), settings.endpoint(), request.pipeline(), settings.consumers(),
                settings.prefetchFor(request.maxInFlight()));
        return subscription;
    }

    /** {@code <queue>.DLQ}, as {@link RabbitMqSubscription} dead-letters by default. */
    @Override
    public String defaultDeadLetterDestination(String source) {
        return RabbitMqSubscription.defaultDeadLetterQueue(source);
    }

    /**
     * Consumes the queue without declaring anything: the configured queue type, exchange and binding are a
     * pipeline source's, and binding a dead-letter queue to the source's exchange would route new messages into it.
     */
    @Override
    public Subscription subscribeDeadLetters(SubscriptionRequest request, DeliveryListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (closed) {
            throw new BrokerException("The RabbitMQ adapter is closed", false);
        }
        RabbitMqSubscription subscription = new RabbitMqSubscription(request, listener, this, scheduler,
                Topology.NONE);
        subscriptions.add(subscription);
        return subscription;
    }

    /**
     * The queue's ready messages ({@code queue.declare} passive), not those delivered to consumers and not yet
     * acknowledged; nothing for a queue that does not exist. Acknowledging removes a message.
     */
    @Override
    public Optional<Backlog> backlog(SubscriptionRequest request) {
        Objects.requireNonNull(request, "request");
        long[] ready = new long[1];
        try {
            withChannel("count the messages of queue '" + request.source() + "'",
                    ch -> ready[0] = ch.queueDeclarePassive(request.source()).getMessageCount());
        } catch (BrokerException e) {
            if (e.getCause() instanceof Exception cause && Topology.notFound(cause)) {
                return Optional.of(new Backlog(0, false));
            }
            throw e;
        }
        return Optional.of(new Backlog(ready[0], false));
    }

    /**
     * AMQP 0-9-1 has no browse: this takes up to {@code max} messages with {@code basic.get} and no acknowledgement on a
     * channel of its own, then closes the channel, which hands every one of them back to the queue. On a classic queue
     * (what the adapter declares for dead letters) they go back to their places, in their order, and keep every
     * property and header; the broker only sets their {@code redelivered} flag, which the runtime and
     * {@code idem dlq replay} do not act on. The trade-offs: while a browse runs, the messages it holds are not
     * handed to a consumer of the queue (they are after it, the channel's close requeues them); and on a quorum
     * queue each browse counts as a delivery towards the queue's {@code delivery-limit}, past which the broker drops
     * or dead-letters the message, so a quorum dead-letter queue should not be browsed often, or have no limit. A
     * stream queue cannot be read by {@code basic.get}: it is refused by the broker, and the error says so. The
     * position is the message's place from the head of the queue ({@code 1}, {@code 2}, ...), the same in the next
     * browse while nobody consumed the queue.
     */
    @Override
    public List<BrowsedMessage> browse(String destination, String reader, int max) {
        Objects.requireNonNull(destination, "destination");
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        if (closed) {
            throw new BrokerException("The RabbitMQ adapter is closed", false);
        }
        int limit = Math.min(max, MAX_PAGE);
        List<BrowsedMessage> out = new ArrayList<>();
        try {
            withChannel("browse queue '" + destination + "'", ch -> {
                ch.queueDeclarePassive(destination);
                while (out.size() < limit) {
                    GetResponse r = ch.basicGet(destination, false);
                    if (r == null) {
                        return;
                    }
                    out.add(new BrowsedMessage(Integer.toString(out.size() + 1),
                            Messages.inbound(destination, r.getEnvelope(), r.getProps(), r.getBody())));
                }
            });
        } catch (BrokerException e) {
            if (e.getCause() instanceof Exception cause && Topology.notFound(cause)) {
                return List.of();
            }
            throw e;
        }
        return out;
    }

    /** Declares {@code queue} as a dead-letter queue when declaring is on. */
    void declareDeadLetterQueue(Topology topology, String queue) {
        if (!topology.declares()) {
            return;
        }
        withChannel("declare the dead-letter queue '" + queue + "'", ch -> topology.declareDeadLetter(ch, queue));
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(message, "message");
        publisher.publish(destination, Messages.outbound(message), message.payload());
    }

    /** Both connections are open (re-opened if they were lost) and a channel opens on the consuming one. */
    @Override
    public void checkHealth() {
        publishing.get();
        withChannel("open a channel", ch -> { });
    }

    private interface ChannelWork {
        void run(Channel channel) throws IOException;
    }

    private void withChannel(String what, ChannelWork work) {
        Channel channel = null;
        try {
            channel = consuming.get().createChannel();
            if (channel == null) {
                throw new BrokerException("RabbitMQ at " + settings.endpoint() + " refused another channel", true);
            }
            work.run(channel);
        } catch (IOException | ShutdownSignalException e) {
            throw new BrokerException("Cannot " + what + " at " + settings.endpoint() + ": " + Topology.reason(e),
                    true, e);
        } finally {
            if (channel != null && channel.isOpen()) {
                try {
                    channel.close();
                } catch (IOException | TimeoutException | RuntimeException ignored) {
                    // The work is done or has failed; a channel that will not close goes with its connection.
                }
            }
        }
    }

    void forget(RabbitMqSubscription subscription) {
        subscriptions.remove(subscription);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (RabbitMqSubscription s : List.copyOf(subscriptions)) {
            s.close();
        }
        scheduler.shutdownNow();
        publisher.close();
        publishing.close();
        consuming.close();
    }
}
