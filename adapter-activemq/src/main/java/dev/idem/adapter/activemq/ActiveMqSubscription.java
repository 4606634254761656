package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerException;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import jakarta.jms.TemporaryQueue;
import jakarta.jms.Topic;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQSession;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.transport.TransportListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A subscription: {@code consumers} sessions on a queue, or one session holding the pipeline's durable
 * subscription on a topic, each with its own thread ({@link SessionWorker}). Thread-safe.
 */
final class ActiveMqSubscription implements Subscription, SubscriptionContext, TransportListener {

    private static final Logger log = LoggerFactory.getLogger(ActiveMqSubscription.class);
    private static final long JOIN_TIMEOUT_MS = 10_000;

    private final SubscriptionRequest request;
    private final JmsDestination source;
    private final JmsDestination deadLetter;
    private final DeliveryListener listener;
    private final Publishers publishers;
    private final ActiveMQConnection connection;
    /** Whether {@link #connection} belongs to this subscription (topics: one client id per subscription). */
    private final boolean ownsConnection;
    private final Runnable onClose;
    private final List<SessionWorker> workers = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean closed;
    /** Until when the broker is not asked for statistics again, after it did not answer (ticker of System.nanoTime). */
    private volatile long statisticsQuietUntil;
    private static final long STATISTICS_TIMEOUT_MS = 1_000;
    private static final long STATISTICS_RETRY_NANOS = TimeUnit.MINUTES.toNanos(1);

    private ActiveMqSubscription(SubscriptionRequest request, JmsDestination source, DeliveryListener listener,
            Publishers publishers, ActiveMQConnection connection, boolean ownsConnection, Runnable onClose) {
        this.request = request;
        this.source = source;
        this.deadLetter = request.deadLetterDestination() != null
                ? JmsDestination.parse(request.deadLetterDestination()) : source.defaultDeadLetter();
        this.listener = listener;
        this.publishers = publishers;
        this.connection = connection;
        this.ownsConnection = ownsConnection;
        this.onClose = onClose;
    }

    /**
     * Opens the sessions and starts their threads.
     *
     * @param connection the adapter's connection for a queue; a new, started connection with the client id
     *        for a topic, owned by the subscription from then on
     * @throws JMSException if a session or consumer cannot be created; everything opened is closed again
     */
    static ActiveMqSubscription open(SubscriptionRequest request, JmsDestination source, DeliveryListener listener,
            Publishers publishers, ActiveMQConnection connection, int consumers, int prefetch, Runnable onClose)
            throws JMSException {
        ActiveMqSubscription s = new ActiveMqSubscription(request, source, listener, publishers, connection,
                source.topic(), onClose);
        try {
            connection.addTransportListener(s);
            int sessions = source.topic() ? 1 : consumers;
            // Per consumer, the broker holds at most prefetch + handed-over-unsettled messages unacknowledged
            // (see SessionWorker): split the consumer's share of the in-flight window between the two.
            int share = Math.max(2, Math.min(prefetch, ceilDiv(request.maxInFlight(), sessions)));
            int consumerPrefetch = share / 2;
            for (int i = 0; i < sessions; i++) {
                s.openSession(i, consumerPrefetch, share - consumerPrefetch);
            }
        } catch (JMSException | RuntimeException e) {
            s.close();
            throw e;
        }
        for (Thread t : s.threads) {
            t.start();
        }
        return s;
    }

    private void openSession(int index, int prefetch, int window) throws JMSException {
        Session session = connection.createSession(false, ActiveMQSession.INDIVIDUAL_ACKNOWLEDGE);
        try {
            ActiveMQDestination destination = source.toJmsWithPrefetch(prefetch);
            MessageConsumer consumer = source.topic()
                    ? session.createDurableSubscriber((Topic) destination, request.pipeline())
                    : session.createConsumer(destination);
            SessionWorker worker = new SessionWorker(this, session, consumer, window);
            workers.add(worker);
            Thread t = new Thread(worker, "idem-activemq-" + request.pipeline() + "-" + index);
            t.setDaemon(true);
            threads.add(t);
        } catch (JMSException | RuntimeException e) {
            session.close();
            throw e;
        }
    }

    private static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }

    @Override
    public String pipeline() {
        return request.pipeline();
    }

    @Override
    public JmsDestination source() {
        return source;
    }

    @Override
    public JmsDestination deadLetter() {
        return deadLetter;
    }

    @Override
    public DeliveryListener listener() {
        return listener;
    }

    @Override
    public Publishers publishers() {
        return publishers;
    }

    @Override
    public void failed(SessionWorker worker, Exception cause) {
        log.error("Pipeline '{}': consuming '{}' from ActiveMQ failed and stopped: {}. Its unsettled messages go "
                + "back to the broker. Use a failover: URL for automatic reconnection.", request.pipeline(),
                source.written(), cause.toString());
    }

    /**
     * The queue's size (messages stored and not yet acknowledged, dispatched ones included), asked of the
     * broker's statistics plugin ({@code <statisticsBrokerPlugin/>}, which the embedded broker runs); empty for a
     * topic, or for a minute after the broker did not answer within a second (the plugin is off).
     */
    @Override
    public Map<String, Long> backlog() {
        if (source.topic() || closed || System.nanoTime() - statisticsQuietUntil < 0) {
            return Map.of();
        }
        Session session = null;
        try {
            session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            TemporaryQueue replies = session.createTemporaryQueue();
            MessageConsumer consumer = session.createConsumer(replies);
            Message query = session.createMessage();
            query.setJMSReplyTo(replies);
            session.createProducer(session.createQueue("ActiveMQ.Statistics.Destination." + source.name())).send(query);
            Message answer = consumer.receive(STATISTICS_TIMEOUT_MS);
            if (answer instanceof MapMessage stats && stats.itemExists("size")) {
                return Map.of(source.name(), stats.getLong("size"));
            }
            statisticsQuietUntil = System.nanoTime() + STATISTICS_RETRY_NANOS;
            log.info("The ActiveMQ broker did not answer a statistics query for '{}'; idem.backlog stays empty"
                    + " (enable <statisticsBrokerPlugin/> in activemq.xml to get it)", source.name());
            return Map.of();
        } catch (JMSException | RuntimeException e) {
            return Map.of();
        } finally {
            if (session != null) {
                try {
                    session.close();
                } catch (JMSException ignored) {
                    // The connection is going or gone; the figure is simply missing.
                }
            }
        }
    }

    @Override
    public void stop() {
        for (SessionWorker w : workers) {
            w.stop();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        stop();
        for (Thread t : threads) {
            joinQuietly(t);
        }
        for (SessionWorker w : workers) {
            w.close();
        }
        connection.removeTransportListener(this);
        if (ownsConnection) {
            try {
                connection.close();
            } catch (JMSException | RuntimeException e) {
                log.debug("Closing the connection of '{}' failed: {}", source.written(), e.toString());
            }
        }
        onClose.run();
    }

    private static void joinQuietly(Thread t) {
        if (t == Thread.currentThread() || !t.isAlive() && t.getState() == Thread.State.NEW) {
            return;
        }
        try {
            t.join(JOIN_TIMEOUT_MS);
            if (t.isAlive()) {
                t.interrupt();
                t.join(TimeUnit.SECONDS.toMillis(1));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- transport events

    @Override
    public void transportInterupted() {
        for (SessionWorker w : workers) {
            w.interrupted();
        }
    }

    @Override
    public void transportResumed() {
        log.info("Pipeline '{}': the connection to ActiveMQ is back; unsettled messages are redelivered",
                request.pipeline());
    }

    @Override
    public void onCommand(Object command) {
    }

    @Override
    public void onException(IOException error) {
    }

    /** For messages: why a topic subscription could not start. */
    static BrokerException clientIdInUse(SubscriptionRequest request, String clientId, JMSException e) {
        return new BrokerException("Cannot subscribe pipeline '" + request.pipeline() + "' to '" + request.source()
                + "': the durable subscription's client id '" + clientId + "' is in use by another connection. A "
                + "topic's durable subscription has one consumer at a time; to share the load, consume a virtual "
                + "topic queue instead (queue://Consumer.<pipeline>.VirtualTopic.<name>)", true, e);
    }
}
