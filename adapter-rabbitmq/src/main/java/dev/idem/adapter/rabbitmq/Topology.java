package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.util.Map;

/**
 * What the adapter declares for a consumed queue when {@code declare} is true: the queue (durable, of the
 * configured type), its binding to the configured exchange, and the dead-letter queue. Declarations are
 * idempotent, so they are repeated on every channel opened. Immutable.
 */
record Topology(boolean declares, String queueType, String exchange, String exchangeType, String bindingKey) {

    /** Declares nothing: for a queue consumed as it is, such as a dead-letter queue read for a replay. */
    static final Topology NONE = new Topology(false, null, null, null, null);

    static Topology of(RabbitMqSettings s) {
        return new Topology(s.declare(), s.queueType(), s.exchange(), s.exchangeType(), s.bindingKey());
    }

    /** Declares {@code queue} and what goes with it; nothing when declaring is off. */
    void declare(Channel channel, String queue) throws IOException {
        if (!declares) {
            return;
        }
        // A classic queue is declared without x-queue-type, as most tools declare it, so that both match.
        Map<String, Object> args = "quorum".equals(queueType) ? Map.of("x-queue-type", "quorum") : null;
        channel.queueDeclare(queue, true, false, false, args);
        if (exchange != null) {
            channel.exchangeDeclare(exchange, exchangeType, true);
            channel.queueBind(queue, exchange, bindingKey);
        }
    }

    /** Declares a dead-letter queue (durable, classic); nothing when declaring is off. */
    void declareDeadLetter(Channel channel, String queue) throws IOException {
        if (declares) {
            channel.queueDeclare(queue, true, false, false, null);
        }
    }

    /** Whether the broker answered that the queue or exchange does not exist (404). */
    static boolean notFound(Exception e) {
        Throwable t = e;
        while (t != null) {
            if (t instanceof ShutdownSignalException sig && sig.getReason() instanceof AMQP.Channel.Close close) {
                return close.getReplyCode() == 404;
            }
            t = t.getCause();
        }
        return false;
    }

    /**
     * Whether retrying may help: not when the broker refused access (403) or found the declaration at odds with
     * the existing queue or exchange (406); a missing queue (404) may yet be created by someone else.
     */
    static boolean retriable(Exception e) {
        Throwable t = e;
        while (t != null) {
            if (t instanceof ShutdownSignalException sig && sig.getReason() instanceof AMQP.Channel.Close close) {
                return close.getReplyCode() != 403 && close.getReplyCode() != 406;
            }
            t = t.getCause();
        }
        return true;
    }

    /** The broker's explanation inside a client exception, e.g. {@code NOT_FOUND - no queue 'x' in vhost '/'}. */
    static String reason(Exception e) {
        Throwable t = e;
        while (t != null) {
            if (t instanceof ShutdownSignalException sig) {
                if (sig.getReason() instanceof AMQP.Channel.Close close) {
                    return close.getReplyText();
                }
                if (sig.getReason() instanceof AMQP.Connection.Close close) {
                    return close.getReplyText();
                }
            }
            t = t.getCause();
        }
        return String.valueOf(e);
    }
}
