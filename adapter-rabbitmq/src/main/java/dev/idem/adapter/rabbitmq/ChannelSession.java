package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.spi.BrokerException;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One consumer channel, from its opening to its closing: the deliveries it received and the settles of
 * their tags. Delivery tags mean something only on the channel that issued them, so a delivery keeps its
 * session, and a settle on a session whose channel closed is refused (the broker has put the message back).
 *
 * <p>Thread-safe: the client's thread adds deliveries, the worker thread takes them, runtime threads settle;
 * every call on the channel is made under the session's lock, as a channel must not be used concurrently.
 */
final class ChannelSession {

    /** Wakes the worker when the channel closes. */
    private static final RabbitDelivery CLOSED = new RabbitDelivery(null, 0, null, null, null);

    private final Channel channel;
    private final String queue;
    private final BlockingQueue<RabbitDelivery> received = new LinkedBlockingQueue<>();
    /** Serializes every call on the channel. */
    private final ReentrantLock lock = new ReentrantLock();
    private final Queue<Long> pendingAcks = new ConcurrentLinkedQueue<>();
    private final AckCoalescer acks = new AckCoalescer();
    private long[] drained = new long[64];
    private String consumerTag;

    private ChannelSession(Channel channel, String queue) {
        this.channel = channel;
        this.queue = queue;
    }

    /**
     * Opens a channel on {@code connection}, declares what {@code topology} says, sets the prefetch and starts
     * consuming {@code queue}.
     *
     * @throws BrokerException if the queue cannot be declared or consumed
     */
    static ChannelSession open(Connection connection, String queue, int prefetch, Topology topology,
            DeliveryFactory factory) {
        Channel channel = null;
        try {
            channel = connection.createChannel();
            if (channel == null) {
                throw new BrokerException("RabbitMQ refused another channel (channel-max reached)", true);
            }
            topology.declare(channel, queue);
            channel.basicQos(prefetch);
            ChannelSession session = new ChannelSession(channel, queue);
            session.consumerTag = channel.basicConsume(queue, false, session.new Consumer(factory));
            return session;
        } catch (IOException | ShutdownSignalException e) {
            abort(channel);
            String hint = topology.declares() ? "" : ". Declare the queue, or set declare: true";
            throw new BrokerException("Cannot consume queue '" + queue + "': " + Topology.reason(e) + hint,
                    Topology.retriable(e), e);
        }
    }

    /** Builds the delivery handle for one received message. */
    @FunctionalInterface
    interface DeliveryFactory {
        RabbitDelivery create(ChannelSession session, long tag, Envelope envelope, AMQP.BasicProperties props,
                byte[] body);
    }

    private final class Consumer extends DefaultConsumer {
        private final DeliveryFactory factory;

        Consumer(DeliveryFactory factory) {
            super(channel);
            this.factory = factory;
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
            received.add(factory.create(ChannelSession.this, envelope.getDeliveryTag(), envelope, props, body));
        }

        @Override
        public void handleShutdownSignal(String tag, ShutdownSignalException sig) {
            received.add(CLOSED);
        }

        @Override
        public void handleCancel(String tag) {
            // The broker cancelled the consumer (queue deleted): start over on a new channel.
            abort(channel);
            received.add(CLOSED);
        }
    }

    String queue() {
        return queue;
    }

    boolean isOpen() {
        return channel.isOpen();
    }

    /**
     * Waits up to {@code timeoutMs} for deliveries and moves up to {@code max} of them into {@code batch}.
     *
     * @return false once the channel has closed: the session is over
     */
    boolean poll(List<RabbitDelivery> batch, int max, long timeoutMs) throws InterruptedException {
        RabbitDelivery first = received.poll(timeoutMs, TimeUnit.MILLISECONDS);
        if (first != null) {
            batch.add(first);
            received.drainTo(batch, max - 1);
        }
        batch.removeIf(d -> d == CLOSED);
        return channel.isOpen();
    }

    /**
     * Acks one tag; false if the channel is gone (the broker redelivers the message instead). Acks that queue up
     * while another thread writes are sent together by that thread, as one multiple ack where
     * {@link AckCoalescer} finds it safe; so an ack may be on the wire a moment after this returns.
     */
    boolean ack(long tag) {
        if (!channel.isOpen()) {
            return false;
        }
        pendingAcks.add(tag);
        flushPendingAcks();
        return true;
    }

    /** Sends the queued acks, unless another thread holds the lock: it sends them after its own work. */
    private void flushPendingAcks() {
        while (!pendingAcks.isEmpty() && lock.tryLock()) {
            try {
                sendPendingAcks();
            } finally {
                lock.unlock();
            }
        }
    }

    private void sendPendingAcks() {
        int n = 0;
        Long tag;
        while ((tag = pendingAcks.poll()) != null) {
            if (n == drained.length) {
                drained = Arrays.copyOf(drained, n * 2);
            }
            drained[n++] = tag;
        }
        if (n > 0) {
            int count = n;
            settle(() -> acks.ack(drained, count, (t, multiple) -> channel.basicAck(t, multiple)));
        }
    }

    /** Requeues one tag; false if the channel is gone (the broker has requeued it already). */
    boolean requeue(long tag) {
        lock.lock();
        boolean done;
        try {
            sendPendingAcks();
            done = settle(() -> channel.basicNack(tag, false, true));
            if (done) {
                acks.settled(tag);
            }
        } finally {
            lock.unlock();
        }
        flushPendingAcks();
        return done;
    }

    private interface ChannelCall {
        void run() throws IOException;
    }

    private boolean settle(ChannelCall call) {
        if (!channel.isOpen()) {
            return false;
        }
        try {
            call.run();
            return true;
        } catch (AlreadyClosedException e) {
            return false;
        } catch (IOException e) {
            throw new BrokerException("Cannot settle a delivery of queue '" + queue + "': " + e, true, e);
        }
    }

    /** Stops the broker's deliveries to this channel; what was delivered can still be settled. */
    void cancel() {
        lock.lock();
        try {
            if (channel.isOpen() && consumerTag != null) {
                channel.basicCancel(consumerTag);
            }
        } catch (IOException | AlreadyClosedException e) {
            // The channel is going away: nothing more will be delivered on it either way.
        } finally {
            lock.unlock();
        }
        flushPendingAcks();
        received.add(CLOSED);
    }

    /** Hands back to the broker what was received but never handed over, e.g. after a stop. */
    void requeueUnhandedOver() {
        RabbitDelivery d;
        while ((d = received.poll()) != null) {
            if (d != CLOSED) {
                requeue(d.tag());
            }
        }
    }

    /** Sends the acks still queued, then closes the channel: the broker requeues every delivery not settled. */
    void close() {
        lock.lock();
        try {
            sendPendingAcks();
            if (channel.isOpen()) {
                channel.close();
            }
        } catch (IOException | TimeoutException | AlreadyClosedException | BrokerException e) {
            abort(channel);
        } finally {
            lock.unlock();
        }
        received.add(CLOSED);
    }

    private static void abort(Channel channel) {
        if (channel != null) {
            try {
                channel.abort();
            } catch (IOException | RuntimeException ignored) {
                // Abort is best effort by definition.
            }
        }
    }
}
