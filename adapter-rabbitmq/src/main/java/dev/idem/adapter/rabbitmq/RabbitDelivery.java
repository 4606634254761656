package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One delivery on one channel. Thread-safe: settled from any thread, at most once; a settle whose channel
 * has closed meanwhile is ignored (logged), since the broker already requeued the message.
 */
final class RabbitDelivery implements Delivery {

    private static final Logger log = LoggerFactory.getLogger(RabbitDelivery.class);

    /** What a delivery needs from its subscription to be retried later or dead-lettered. */
    interface Settler {
        void requeueAfter(Duration delay, Runnable requeue);

        String deadLetterQueue();

        void publishDeadLetter(String queue, AMQP.BasicProperties props, byte[] body);
    }

    private final ChannelSession session;
    private final long tag;
    private final InboundMessage message;
    private final AMQP.BasicProperties props;
    private final Settler settler;
    private final AtomicBoolean settled = new AtomicBoolean();

    RabbitDelivery(ChannelSession session, long tag, InboundMessage message, AMQP.BasicProperties props,
            Settler settler) {
        this.session = session;
        this.tag = tag;
        this.message = message;
        this.props = props;
        this.settler = settler;
    }

    long tag() {
        return tag;
    }

    @Override
    public InboundMessage message() {
        return message;
    }

    @Override
    public void ack() {
        claimSettle("ack");
        ignoredIfGone(session.ack(tag), "ack");
    }

    @Override
    public void retryLater(Duration delay) {
        claimSettle("retry later");
        if (delay.isZero() || delay.isNegative()) {
            ignoredIfGone(session.requeue(tag), "requeue");
        } else {
            settler.requeueAfter(delay, () -> ignoredIfGone(session.requeue(tag), "requeue"));
        }
    }

    @Override
    public void deadLetter(DeadLetterReason reason) {
        claimSettle("dead-letter");
        if (!session.isOpen()) {
            // The original is back in its queue: a copy now would be a second one when it is dead-lettered again.
            ignoredIfGone(false, "dead-letter");
            return;
        }
        String queue = settler.deadLetterQueue();
        try {
            settler.publishDeadLetter(queue, Messages.deadLetter(props, session.queue(), reason), message.payload());
        } catch (BrokerException e) {
            settled.set(false);
            throw e;
        }
        ignoredIfGone(session.ack(tag), "ack after dead-lettering to '" + queue + "'");
    }

    private void claimSettle(String action) {
        if (!settled.compareAndSet(false, true)) {
            throw new IllegalStateException("Cannot " + action + " delivery " + tag + " of queue '" + session.queue()
                    + "': it was already settled");
        }
    }

    private void ignoredIfGone(boolean done, String action) {
        if (!done) {
            log.info("Ignored {} of delivery {} of queue '{}': its channel has closed, so RabbitMQ has requeued "
                    + "the message and will deliver it again", action, tag, session.queue());
        }
    }
}
