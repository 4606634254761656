package dev.idem.adapter.activemq;

import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Sessions for sending (publish, dead-letter copies), shared by every thread: a JMS session is
 * single-threaded, so each send borrows one for its duration and returns it. A session whose send failed
 * is closed instead of returned. Thread-safe.
 */
final class Publishers implements AutoCloseable {

    /** What a send does with its borrowed session. */
    @FunctionalInterface
    interface MessageBuilder {
        Message build(Session session) throws JMSException;
    }

    private record Sender(Session session, MessageProducer producer) {
    }

    private final Connection connection;
    private final ConcurrentLinkedQueue<Sender> idle = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    Publishers(Connection connection) {
        this.connection = connection;
    }

    /**
     * Sends one persistent message and returns once the broker stored it (the connection factory is set to
     * send synchronously).
     */
    void send(JmsDestination destination, MessageBuilder builder) throws JMSException {
        Sender sender = idle.poll();
        if (sender == null) {
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer producer = session.createProducer(null);
            producer.setDeliveryMode(DeliveryMode.PERSISTENT);
            sender = new Sender(session, producer);
        }
        try {
            sender.producer.send(destination.toJms(), builder.build(sender.session));
        } catch (JMSException | RuntimeException e) {
            closeQuietly(sender);
            throw e;
        }
        idle.add(sender);
        if (closed) {
            close();
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Sender s = idle.poll(); s != null; s = idle.poll()) {
            closeQuietly(s);
        }
    }

    private static void closeQuietly(Sender sender) {
        try {
            sender.session.close();
        } catch (JMSException | RuntimeException ignored) {
            // The connection is going away or gone; nothing is left to free on the broker.
        }
    }
}
