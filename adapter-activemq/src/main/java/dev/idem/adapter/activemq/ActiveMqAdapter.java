package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import jakarta.jms.InvalidClientIDException;
import jakarta.jms.JMSException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ActiveMQ adapter: one connection for queue consumers and sending, one more per topic subscription (a
 * durable subscription needs its own client id), and the embedded broker when configured. Thread-safe.
 */
final class ActiveMqAdapter implements BrokerAdapter {

    private static final Logger log = LoggerFactory.getLogger(ActiveMqAdapter.class);

    private final ActiveMQConnectionFactory factory;
    private final String url;
    private final ActiveMQConnection connection;
    private final Publishers publishers;
    private final int consumers;
    private final int prefetch;
    private final EmbeddedBroker embedded;
    private final Set<ActiveMqSubscription> subscriptions = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private ActiveMqAdapter(ActiveMQConnectionFactory factory, String url, ActiveMQConnection connection,
            int consumers, int prefetch, EmbeddedBroker embedded) {
        this.factory = factory;
        this.url = url;
        this.connection = connection;
        this.publishers = new Publishers(connection);
        this.consumers = consumers;
        this.prefetch = prefetch;
        this.embedded = embedded;
    }

    /**
     * Connects; on failure stops the embedded broker, if any.
     *
     * @throws BrokerException (retriable) if the broker cannot be reached
     */
    static ActiveMqAdapter connect(ActiveMQConnectionFactory factory, String url, int consumers, int prefetch,
            EmbeddedBroker embedded) {
        try {
            ActiveMQConnection connection = (ActiveMQConnection) factory.createConnection();
            try {
                connection.start();
            } catch (JMSException | RuntimeException e) {
                closeQuietly(connection);
                throw e;
            }
            return new ActiveMqAdapter(factory, url, connection, consumers, prefetch, embedded);
        } catch (JMSException | RuntimeException e) {
            if (embedded != null) {
                embedded.stop();
            }
            throw new BrokerException("Cannot connect to ActiveMQ at " + url + ": " + describe(e), true, e);
        }
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        requireOpen();
        JmsDestination source = JmsDestination.parse(request.source());
        ActiveMQConnection target = connection;
        String clientId = "idem:" + request.pipeline();
        try {
            if (source.topic()) {
                target = (ActiveMQConnection) factory.createConnection();
                target.setClientID(clientId);
                target.start();
            }
            ActiveMqSubscription[] self = new ActiveMqSubscription[1];
            ActiveMqSubscription s = ActiveMqSubscription.open(request, source, listener, publishers, target,
                    consumers, prefetch, () -> subscriptions.remove(self[0]));
            self[0] = s;
            subscriptions.add(s);
            return s;
        } catch (InvalidClientIDException e) {
            closeOwn(target);
            throw ActiveMqSubscription.clientIdInUse(request, clientId, e);
        } catch (JMSException | RuntimeException e) {
            closeOwn(target);
            throw new BrokerException("Cannot consume '" + request.source() + "' for pipeline '" + request.pipeline()
                    + "' from ActiveMQ at " + url + ": " + describe(e), true, e);
        }
    }

    private void closeOwn(ActiveMQConnection target) {
        if (target != connection) {
            closeQuietly(target);
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
                    + describe(e), true, e);
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
        closeQuietly(connection);
        if (embedded != null) {
            embedded.stop();
        }
    }

    private static void closeQuietly(ActiveMQConnection c) {
        try {
            c.close();
        } catch (JMSException | RuntimeException e) {
            log.debug("Closing an ActiveMQ connection failed: {}", e.toString());
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
