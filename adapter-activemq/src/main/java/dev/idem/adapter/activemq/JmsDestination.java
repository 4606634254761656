package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerException;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;

/**
 * A source or destination as users write it: {@code queue://orders}, {@code topic://prices}, or a plain
 * name, which is a queue. Immutable.
 */
record JmsDestination(String written, String name, boolean topic) {

    static final String QUEUE_PREFIX = "queue://";
    static final String TOPIC_PREFIX = "topic://";

    /** Parses what a pipeline's {@code source}, {@code dead-letter} or a publish call names. */
    static JmsDestination parse(String written) {
        String name;
        boolean topic;
        if (written.startsWith(TOPIC_PREFIX)) {
            name = written.substring(TOPIC_PREFIX.length());
            topic = true;
        } else if (written.startsWith(QUEUE_PREFIX)) {
            name = written.substring(QUEUE_PREFIX.length());
            topic = false;
        } else {
            name = written;
            topic = false;
        }
        if (name.isBlank() || name.indexOf('?') >= 0) {
            throw new BrokerException("Invalid ActiveMQ destination '" + written + "': write queue://<name>, "
                    + "topic://<name> or a plain queue name, without '?' options", false);
        }
        return new JmsDestination(written, name, topic);
    }

    /** The default dead-letter destination: the queue {@code <name>.DLQ}, for queues and topics alike. */
    JmsDestination defaultDeadLetter() {
        return new JmsDestination(name + ".DLQ", name + ".DLQ", false);
    }

    ActiveMQDestination toJms() {
        return topic ? new ActiveMQTopic(name) : new ActiveMQQueue(name);
    }

    /** The destination with a consumer prefetch option, as ActiveMQ reads it from the destination name. */
    ActiveMQDestination toJmsWithPrefetch(int prefetch) {
        String withOption = name + "?consumer.prefetchSize=" + prefetch;
        return topic ? new ActiveMQTopic(withOption) : new ActiveMQQueue(withOption);
    }
}
