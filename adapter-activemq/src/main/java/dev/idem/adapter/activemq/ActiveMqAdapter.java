package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import jakarta.jms.InvalidClientIDException;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.QueueBrowser;
import jakarta.jms.Session;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;

/**
 * The ActiveMQ adapter: one connection for queue consumers and sending, one more per topic subscription (a
 * durable subscription needs its own client id), and the embedded broker when configured. Thread-safe.
 */
final class ActiveMqAdapter implements BrokerAdapter, DeadLetterBrowser {

    private final ActiveMQConnectionFactory factory;
    private final String url;
    private final ConnectBound bound;
    private final ActiveMQConnection connection;
    private final Publishers publishers;
    private final int consumers;
    private final int prefetch;
    private final EmbeddedBroker embedded;
    private final Set<ActiveMqSubscription> subscriptions = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private ActiveMqAdapter(ActiveMQConnectionFactory factory, String url, ConnectBound bound,
            ActiveMQConnection connection, int consumers, int prefetch, EmbeddedBroker embedded) {
        this.factory = factory;
        this.url = url;
        this.bound = bound;
        this.connection = connection;
        this.publishers = new Publishers(connection);
        this.consumers = consumers;
        this.prefetch = prefetch;
        this.embedded = embedded;
    }

    /**
     * How long connecting may take, and the config key that sets it (for messages).
     *
     * @param timeout the longest a connection may take to start; also how long a send through a {@code failover:}
     *        URL without its own {@code timeout} option waits for a lost connection to come back
     */
    record ConnectBound(Duration timeout, String key) {
    }

    /**
     * Connects within {@code bound}; on failure stops the embedded broker, if any.
     *
     * @throws BrokerException (retriable) if the broker cannot be reached, or not within the bound
     */
    static ActiveMqAdapter connect(ActiveMQConnectionFactory factory, String url, ConnectBound bound, int consumers,
            int prefetch, EmbeddedBroker embedded) {
        try {
            ActiveMQConnection connection = BoundedConnect.open(factory, url, bound.timeout(), bound.timeout(), null);
            return new ActiveMqAdapter(factory, url, bound, connection, consumers, prefetch, embedded);
        } catch (JMSException | TimeoutException | InterruptedException | RuntimeException e) {
            if (embedded != null) {
                embedded.stop();
            }
            throw connectFailure("Cannot connect to ActiveMQ at " + url, url, bound, e);
        }
    }

    /** Why connecting failed: the broker's error, or the bound that ran out and its key. */
    private static BrokerException connectFailure(String what, String url, ConnectBound bound, Exception e) {
        if (e instanceof TimeoutException) {
            return new BrokerException(what + ": no connection within " + ConfigKey.formatDuration(bound.timeout())
                    + " (" + bound.key() + "). Check that the broker runs and that the URL's hosts and ports are right"
                    + (BoundedConnect.isFailover(url) ? "; a failover: URL retries until then" : ""), true);
        }
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
            return new BrokerException(what + ": interrupted", true, e);
        }
        return new BrokerException(what + ": " + describe(e), true, e);
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        requireOpen();
        JmsDestination source = JmsDestination.parse(request.source());
        String clientId = "idem:" + request.pipeline();
        ActiveMQConnection target = connection;
        if (source.topic()) {
            try {
                target = BoundedConnect.open(factory, url, bound.timeout(), bound.timeout(),
                        c -> c.setClientID(clientId));
            } catch (InvalidClientIDException e) {
                throw ActiveMqSubscription.clientIdInUse(request, clientId, e);
            } catch (JMSException | TimeoutException | InterruptedException | RuntimeException e) {
                throw connectFailure("Cannot subscribe pipeline '" + request.pipeline() + "' to '" + request.source()
                        + "': its durable subscription's connection to ActiveMQ at " + url + " failed", url, bound, e);
            }
        }
        try {
            ActiveMqSubscription[] self = new ActiveMqSubscription[1];
            ActiveMqSubscription s = ActiveMqSubscription.open(request, source, listener, publishers, target,
                    consumers, prefetch, () -> subscriptions.remove(self[0]));
            self[0] = s;
            subscriptions.add(s);
            return s;
        } catch (JMSException | RuntimeException e) {
            closeOwn(target);
            throw new BrokerException("Cannot consume '" + request.source() + "' for pipeline '" + request.pipeline()
                    + "' from ActiveMQ at " + url + ": " + describe(e), true, e);
        }
    }

    private void closeOwn(ActiveMQConnection target) {
        if (target != connection) {
            BoundedConnect.closeQuietly(target);
        }
    }

    /** The queue {@code <name>.DLQ}, for a queue or topic source alike (see {@link JmsDestination#defaultDeadLetter}). */
    @Override
    public String defaultDeadLetterDestination(String source) {
        return JmsDestination.parse(source).defaultDeadLetter().written();
    }

    /**
     * Reads the queue through a JMS {@link QueueBrowser} on a session of its own, closed before returning: the broker
     * hands copies to the browser and keeps every message where it is, for its consumers, unacknowledged and with
     * its delivery count unchanged. The position is the {@code JMSMessageID}. A topic keeps no messages to browse; a
     * message whose body type the adapter does not read ({@code ObjectMessage}, {@code StreamMessage}) is shown
     * with an empty payload, never deserialized.
     */
    @Override
    public List<BrowsedMessage> browse(String destination, String reader, int max) {
        requireOpen();
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        JmsDestination queue = JmsDestination.parse(destination);
        if (queue.topic()) {
            throw new BrokerException("Cannot browse '" + destination + "': a topic keeps no messages to browse;"
                    + " dead letters go to a queue", false);
        }
        List<BrowsedMessage> out = new ArrayList<>();
        Session session = null;
        try {
            session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            QueueBrowser browser = session.createBrowser(session.createQueue(queue.name()));
            Enumeration<?> messages = browser.getEnumeration();
            int limit = Math.min(max, MAX_PAGE);
            while (out.size() < limit && messages.hasMoreElements()) {
                Message m = (Message) messages.nextElement();
                out.add(new BrowsedMessage(m.getJMSMessageID(), browsed(destination, m)));
            }
            browser.close();
            return out;
        } catch (JMSException | RuntimeException e) {
            throw new BrokerException("Could not browse '" + destination + "' on ActiveMQ at " + url + ": "
                    + describe(e), true, e);
        } finally {
            if (session != null) {
                try {
                    session.close();
                } catch (JMSException e) {
                    // Browsing is done; the session goes with the connection.
                }
            }
        }
    }

    private static InboundMessage browsed(String destination, Message m) throws JMSException {
        try {
            return JmsMessages.inbound(destination, m);
        } catch (IllegalArgumentException unsupported) {
            return new InboundMessage(destination, null, null, Map.of(), new byte[0], m.getJMSMessageID(), false, 0);
        }
    }

    /** Sends a persistent BytesMessage synchronously: returns once the broker has stored it. */
    @Override
    public void publish(String destination, OutboundMessage message) {
        requireOpen();
        JmsDestination target = JmsDestination.parse(destination);
        try {
            publishers.send(target, session -> JmsMessages.outbound(session, message));
        } catch (JMSException | RuntimeException e) {
            throw new BrokerException("Could not publish to '" + destination + "' on ActiveMQ at " + url + ": "
                    + describe(e) + (BoundedConnect.isFailover(url) ? " (while the connection is lost, a send waits "
                    + "at most " + ConfigKey.formatDuration(bound.timeout()) + ", " + bound.key() + ", unless the URL "
                    + "sets the failover timeout option)" : ""), true, e);
        }
    }

    @Override
    public void checkHealth() {
        requireOpen();
        if (connection.isClosed() || connection.isTransportFailed() || !connection.getTransport().isConnected()) {
            throw new BrokerException("Not connected to ActiveMQ at " + url
                    + (connection.isTransportFailed() ? " (the connection failed; use a failover: URL to reconnect)"
                            : " (reconnecting)"), true);
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new BrokerException("The ActiveMQ adapter for " + url + " is closed", false);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (ActiveMqSubscription s : subscriptions) {
            s.close();
        }
        publishers.close();
        BoundedConnect.closeQuietly(connection);
        if (embedded != null) {
            embedded.stop();
        }
    }

    private static String describe(Exception e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = e.getMessage() == null ? e.toString() : e.getMessage();
        return root == e || root.getMessage() == null || text.contains(root.getMessage()) ? text
                : text + " (" + root.getMessage() + ")";
    }
}
