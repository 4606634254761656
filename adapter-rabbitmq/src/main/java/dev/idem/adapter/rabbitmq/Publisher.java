package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.spi.BrokerException;
import java.io.IOException;
import java.util.concurrent.TimeoutException;

/**
 * Publishes one message at a time on a dedicated channel in confirm mode, to the default exchange with
 * {@code mandatory} (except to a direct reply-to pseudo-queue), and returns once the broker confirmed it.
 * Thread-safe: publishes are serialized, as a channel must not interleave them; the channel is opened again
 * after a failure.
 */
final class Publisher implements AutoCloseable {

    private static final long CONFIRM_TIMEOUT_MS = 30_000;
    /**
     * The pseudo-queues of direct reply-to a requester's {@code reply_to} names: the broker treats a publish to one
     * as unrouted for {@code mandatory} (it would return every reply it delivers), so replies go without.
     */
    private static final String DIRECT_REPLY_TO_PREFIX = "amq.rabbitmq.reply-to.";

    private final Connector connector;
    private Channel channel;
    /** Set by the connection's thread when the broker returns the message being published: no queue took it. */
    private volatile String returned;

    Publisher(Connector connector) {
        this.connector = connector;
    }

    /**
     * @throws BrokerException if no queue named {@code queue} took the message (not retriable) or the broker did
     *         not confirm it (retriable)
     */
    synchronized void publish(String queue, AMQP.BasicProperties props, byte[] body) {
        try {
            Channel ch = channel();
            returned = null;
            ch.basicPublish("", queue, !queue.startsWith(DIRECT_REPLY_TO_PREFIX), props, body);
            ch.waitForConfirmsOrDie(CONFIRM_TIMEOUT_MS);
        } catch (IOException | TimeoutException | ShutdownSignalException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            discardChannel();
            throw new BrokerException("RabbitMQ at " + connector.endpoint() + " did not confirm a message to queue '"
                    + queue + "': " + e, true, e);
        }
        String reply = returned;
        if (reply != null) {
            throw new BrokerException("RabbitMQ at " + connector.endpoint() + " returned a message to queue '" + queue
                    + "' (" + reply + "): no queue of that name exists. Declare it, or let the adapter declare it "
                    + "(declare: true)", false);
        }
    }

    private Channel channel() throws IOException {
        if (channel == null || !channel.isOpen()) {
            Channel ch = connector.get().createChannel();
            ch.confirmSelect();
            ch.addReturnListener(r -> returned = r.getReplyCode() + " " + r.getReplyText());
            channel = ch;
        }
        return channel;
    }

    private void discardChannel() {
        if (channel != null) {
            try {
                channel.abort();
            } catch (IOException | RuntimeException ignored) {
                // Going away anyway: a fresh channel is opened for the next publish.
            }
            channel = null;
        }
    }

    @Override
    public synchronized void close() {
        discardChannel();
    }
}
