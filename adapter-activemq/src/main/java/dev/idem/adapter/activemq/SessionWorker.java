package dev.idem.adapter.activemq;

import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One JMS session of a subscription and the thread that owns it: receives batches, hands them to the
 * listener, and recovers the session for retries.
 *
 * <h2>Retry later through {@code Session.recover()}</h2>
 * {@code recover()} redelivers every unacknowledged message of the session, including ones the runtime is
 * still working on; a redelivered copy of such a message would then race with the original. So a retry only
 * marks the delivery: the session's thread stops handing over new messages and recovers once every delivery
 * it handed over is settled. At that moment the only unacknowledged messages are those the runtime asked to
 * retry, and the client's {@code RedeliveryPolicy} ({@code redelivery.*}) redelivers exactly them, with its
 * delay and an incremented {@code JMSXDeliveryCount}. Nothing is lost: a retried message is never
 * acknowledged, and dies with the session at worst, which the broker redelivers. The cost is a pause of this
 * session (not of the others) until its in-flight deliveries are settled; the requested delay is replaced by
 * the policy's, as {@code recover()} has no per-message delay.
 *
 * <h2>Generations</h2>
 * When the connection's transport is interrupted (a {@code failover:} reconnect), the broker redelivers
 * everything unacknowledged. Deliveries handed over before are then stale: their settles are ignored
 * (individual acks name their message, so an ack of a stale handle could at most ack the very same message,
 * but it is not sent at all), and the recovery bookkeeping starts afresh.
 *
 * <h2>Window</h2>
 * With {@code INDIVIDUAL_ACKNOWLEDGE} the client tells the broker about received messages ("delivered"
 * acks), which extends the consumer's prefetch window by the messages received and not yet acknowledged.
 * So the broker's count of unacknowledged messages per consumer is its prefetch plus what the session
 * handed over unsettled; the worker bounds the latter by {@code window}, keeping the sum within what
 * the subscription chose (at most 200, the broker's default {@code maxPageSize}).
 *
 * <p>Thread-safe: settle calls come from any thread; {@link #run()} runs on the worker's own thread.
 */
final class SessionWorker implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(SessionWorker.class);
    private static final long RECEIVE_TIMEOUT_MS = 200;
    /** The dead-letter cause of a message of a type whose body the adapter does not hand to handlers. */
    static final String UNSUPPORTED_MESSAGE_TYPE = "unsupported-message-type";
    /** The dead-letter cause of a message whose body or properties could not be read. */
    static final String UNREADABLE_MESSAGE = "unreadable-message";

    private final SubscriptionContext context;
    private final Session session;
    private final MessageConsumer consumer;
    /** The most deliveries of this session handed over and not settled at once. */
    private final int window;
    private final AtomicLong generation = new AtomicLong();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition settledAll = lock.newCondition();
    /** Deliveries of the current generation handed over and not settled; guarded by {@link #lock}. */
    private int unsettled;
    /** Whether some delivery of the current generation asked to be retried; guarded by {@link #lock}. */
    private boolean retryPending;
    /** The generation {@link #unsettled} and {@link #retryPending} count for; guarded by {@link #lock}. */
    private long countedGeneration;
    private volatile boolean stopped;

    SessionWorker(SubscriptionContext context, Session session, MessageConsumer consumer, int window) {
        this.context = context;
        this.session = session;
        this.consumer = consumer;
        this.window = window;
    }

    @Override
    public void run() {
        try {
            while (!stopped) {
                if (!recoverWhenSettled()) {
                    continue;
                }
                int room = awaitRoom();
                if (room == 0) {
                    continue;
                }
                long gen = generation.get();
                List<Delivery> batch = receiveBatch(gen, room);
                if (batch.isEmpty()) {
                    continue;
                }
                lock.lock();
                try {
                    if (gen != generation.get()) {
                        // Received across an interruption: the broker redelivers these; do not hand them over.
                        continue;
                    }
                    syncGeneration();
                    unsettled += batch.size();
                } finally {
                    lock.unlock();
                }
                context.listener().onDeliveries(batch);
            }
        } catch (JMSException | RuntimeException e) {
            if (!stopped) {
                context.failed(this, e);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Waits (briefly) until fewer than {@link #window} deliveries are unsettled.
     *
     * @return how many may be handed over now; 0 to re-check stop and retries first
     */
    private int awaitRoom() throws InterruptedException {
        lock.lock();
        try {
            syncGeneration();
            if (unsettled >= window && !retryPending && !stopped) {
                settledAll.await(RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                syncGeneration();
            }
            return retryPending || stopped ? 0 : Math.max(0, window - unsettled);
        } finally {
            lock.unlock();
        }
    }

    private List<Delivery> receiveBatch(long gen, int maxBatch) throws JMSException {
        List<Delivery> batch = new ArrayList<>();
        for (Message m = consumer.receive(RECEIVE_TIMEOUT_MS); m != null; m = consumer.receiveNoWait()) {
            Delivery d = delivery(m, gen);
            if (d != null) {
                batch.add(d);
                if (batch.size() >= maxBatch) {
                    break;
                }
            }
        }
        return batch;
    }

    /** The delivery for {@code m}, or {@code null} when its body cannot be read: it is dead-lettered instead. */
    private Delivery delivery(Message m, long gen) {
        String unsupported = JmsMessages.unsupportedType(m);
        if (unsupported != null) {
            deadLetterUnreadable(m, gen, UNSUPPORTED_MESSAGE_TYPE, "The message is " + unsupported
                    + "; publish a BytesMessage, TextMessage or MapMessage");
            return null;
        }
        try {
            return new JmsDelivery(this, m, JmsMessages.inbound(context.source().written(), m), gen);
        } catch (JMSException | RuntimeException e) {
            deadLetterUnreadable(m, gen, UNREADABLE_MESSAGE, "Its body or properties could not be read: " + e);
            return null;
        }
    }

    /**
     * Dead-letters a message no handler may see, on this thread, without handing it over: sends the copy, then
     * acknowledges the original. If the copy fails, the original stays unacknowledged and the session is
     * recovered once its other deliveries are settled, so the broker redelivers it (with the redelivery policy's
     * delay) and it is tried again.
     */
    private void deadLetterUnreadable(Message m, long gen, String cause, String detail) {
        String id = messageId(m);
        String source = context.source().written();
        if (!isCurrent(gen)) {
            return;
        }
        DeadLetterReason reason = new DeadLetterReason(cause, detail, 0, context.pipeline());
        try {
            context.publishers().send(context.deadLetter(), session -> JmsMessages.unreadableCopy(m, source, reason));
        } catch (JMSException | RuntimeException e) {
            log.warn("Pipeline '{}': could not dead-letter message {} from '{}' to '{}' ({}): {}; it stays "
                    + "unacknowledged and is redelivered", context.pipeline(), id, source,
                    context.deadLetter().written(), cause, e.toString());
            redeliverLater(gen);
            return;
        }
        log.warn("Pipeline '{}': message {} from '{}' dead-lettered to '{}' without running the handler ({}): {}",
                context.pipeline(), id, source, context.deadLetter().written(), cause, detail);
        if (!isCurrent(gen)) {
            return;
        }
        try {
            m.acknowledge();
        } catch (JMSException | RuntimeException e) {
            log.warn("Pipeline '{}': could not acknowledge message {} from '{}' after dead-lettering it: {}; it is "
                    + "redelivered and dead-lettered again", context.pipeline(), id, source, e.toString());
            redeliverLater(gen);
        }
    }

    private static String messageId(Message m) {
        try {
            return m.getJMSMessageID();
        } catch (JMSException e) {
            return "(no JMSMessageID)";
        }
    }

    /**
     * With a retry pending, waits until every delivery handed over is settled, then recovers the session.
     *
     * @return whether the caller may receive now (false: stopped, or the state changed while waiting)
     */
    private boolean recoverWhenSettled() throws InterruptedException, JMSException {
        lock.lock();
        try {
            syncGeneration();
            if (!retryPending) {
                return true;
            }
            while (unsettled > 0 && retryPending && !stopped) {
                // Timed: an interruption bumps the generation without signalling.
                settledAll.await(RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                syncGeneration();
            }
            if (stopped || !retryPending) {
                return false;
            }
            retryPending = false;
        } finally {
            lock.unlock();
        }
        // Only retried messages are unacknowledged now, and no other thread uses the session.
        session.recover();
        return true;
    }

    void settled(long gen) {
        lock.lock();
        try {
            syncGeneration();
            if (gen == countedGeneration && (--unsettled == 0 || unsettled == window - 1)) {
                settledAll.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    void retryRequested(long gen) {
        lock.lock();
        try {
            syncGeneration();
            if (gen == countedGeneration) {
                retryPending = true;
                --unsettled;
                settledAll.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Asks for the session to be recovered once every delivery handed over is settled, so that a message that
     * was never handed over and is not acknowledged is redelivered.
     */
    private void redeliverLater(long gen) {
        lock.lock();
        try {
            syncGeneration();
            if (gen == countedGeneration) {
                retryPending = true;
                settledAll.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The transport was interrupted: the broker redelivers everything unacknowledged of this session. Called
     * on the transport's thread, so it only bumps the generation and never blocks (an ack may be waiting on the
     * reconnect that thread drives); the bookkeeping catches up under the lock.
     */
    void interrupted() {
        generation.incrementAndGet();
    }

    /** Under {@link #lock}: starts the bookkeeping afresh once the generation moved on. */
    private void syncGeneration() {
        long current = generation.get();
        if (countedGeneration != current) {
            countedGeneration = current;
            unsettled = 0;
            retryPending = false;
        }
    }

    boolean isCurrent(long gen) {
        return gen == generation.get();
    }

    void staleSettle(JmsDelivery delivery) {
        log.debug("Ignoring the settle of {}: the connection was interrupted since; the broker redelivers it",
                delivery.describe());
    }

    Publishers publishers() {
        return context.publishers();
    }

    JmsDestination deadLetterDestination() {
        return context.deadLetter();
    }

    /** Stops handing over batches; settles keep working. */
    void stop() {
        stopped = true;
        lock.lock();
        try {
            settledAll.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Closes the consumer and the session; unacknowledged messages go back to the broker. */
    void close() {
        stop();
        try {
            consumer.close();
        } catch (JMSException | RuntimeException e) {
            log.debug("Closing a consumer of '{}' failed: {}", context.source().written(), e.toString());
        }
        try {
            session.close();
        } catch (JMSException | RuntimeException e) {
            log.debug("Closing a session of '{}' failed: {}", context.source().written(), e.toString());
        }
    }
}
