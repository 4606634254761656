package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One received JMS message and its settlement. Thread-safe: the runtime settles it from its own threads.
 *
 * <p>Acknowledging from a thread other than the session's is safe in activemq-client 6.3.1 with
 * {@code INDIVIDUAL_ACKNOWLEDGE}: the message's acknowledge callback ({@code ActiveMQMessageConsumer}'s
 * {@code acknowledge(MessageDispatch)}) builds a new {@code MessageAck} naming this message alone, hands it
 * to {@code ActiveMQSession.sendAck}, which writes it through the connection's thread-safe transport, and
 * removes the dispatch from the consumer's delivered list under that list's lock. It touches none of the
 * state the receiving thread mutates unlocked. So acks are sent directly, not handed to the session's thread.
 */
final class JmsDelivery implements Delivery {

    private final SessionWorker worker;
    private final Message jms;
    private final InboundMessage message;
    private final long generation;
    private final AtomicBoolean settled = new AtomicBoolean();

    JmsDelivery(SessionWorker worker, Message jms, InboundMessage message, long generation) {
        this.worker = worker;
        this.jms = jms;
        this.message = message;
        this.generation = generation;
    }

    @Override
    public InboundMessage message() {
        return message;
    }

    @Override
    public void ack() {
        if (!settle()) {
            return;
        }
        try {
            acknowledgeOriginal();
        } finally {
            worker.settled(generation);
        }
    }

    /**
     * Leaves the message unacknowledged and asks the session's thread to {@code recover()} the session once
     * every other delivery it handed over is settled; the client's redelivery policy then redelivers it
     * (with its delay), counting the delivery. {@code delay} is not used: see {@link SessionWorker}.
     */
    @Override
    public void retryLater(Duration delay) {
        if (!settle()) {
            return;
        }
        worker.retryRequested(generation);
    }

    @Override
    public void deadLetter(DeadLetterReason reason) {
        if (!settle()) {
            return;
        }
        try {
            if (!worker.isCurrent(generation)) {
                throw new BrokerException("Cannot dead-letter " + describe() + ": the connection to ActiveMQ was "
                        + "interrupted since it was received; the broker redelivers it", true);
            }
            try {
                worker.publishers().send(worker.deadLetterDestination(),
                        session -> JmsMessages.deadLetter(session, message, reason));
            } catch (JMSException | RuntimeException e) {
                throw new BrokerException("Could not dead-letter " + describe() + " to '"
                        + worker.deadLetterDestination().written() + "': " + e.getMessage()
                        + "; the original stays unacknowledged and is redelivered", true, e);
            }
            acknowledgeOriginal();
        } finally {
            worker.settled(generation);
        }
    }

    private boolean settle() {
        return settled.compareAndSet(false, true);
    }

    /**
     * Acknowledges this message alone, unless the connection was interrupted since it was received: the
     * broker redelivers it then, and the stale handle must not be used.
     */
    private void acknowledgeOriginal() {
        if (!worker.isCurrent(generation)) {
            worker.staleSettle(this);
            return;
        }
        try {
            jms.acknowledge();
        } catch (JMSException | RuntimeException e) {
            throw new BrokerException("Could not acknowledge " + describe() + ": " + e.getMessage()
                    + "; it will be redelivered", true, e);
        }
    }

    String describe() {
        return "message " + message.brokerMessageId() + " from '" + message.source() + "'";
    }
}
