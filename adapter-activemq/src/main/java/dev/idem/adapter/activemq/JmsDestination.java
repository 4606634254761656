package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerException;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTempQueue;
import org.apache.activemq.command.ActiveMQTempTopic;
import org.apache.activemq.command.ActiveMQTopic;

/**
 * A source or destination as users write it: {@code queue://orders}, {@code topic://prices}, or a plain
 * name, which is a queue. A request's {@code JMSReplyTo} may also name a temporary queue or topic
 * ({@code temp-queue://...}, {@code temp-topic://...}), which only a reply is published to. Immutable.
 */
record JmsDestination(String written, String name, boolean topic, boolean temporary) {

    static final String QUEUE_PREFIX = "queue://";
    static final String TOPIC_PREFIX = "topic://";
    static final String TEMP_QUEUE_PREFIX = "temp-queue://";
    static final String TEMP_TOPIC_PREFIX = "temp-topic://";

    JmsDestination(String written, String name, boolean topic) {
        this(written, name, topic, false);
    }

    /** How a request's {@code JMSReplyTo} is written, for {@link #parse} to read back when the reply is published. */
    static String written(ActiveMQDestination replyTo) {
        String prefix = replyTo.isTemporary()
                ? (replyTo.isTopic() ? TEMP_TOPIC_PREFIX : TEMP_QUEUE_PREFIX)
                : (replyTo.isTopic() ? TOPIC_PREFIX : QUEUE_PREFIX);
        return prefix + replyTo.getPhysicalName();
    }

    /** Parses what a pipeline's {@code source}, {@code dead-letter} or a publish call names. */
    static JmsDestination parse(String written) {
        String name;
        boolean topic;
        if (written.startsWith(TEMP_QUEUE_PREFIX) || written.startsWith(TEMP_TOPIC_PREFIX)) {
            boolean tempTopic = written.startsWith(TEMP_TOPIC_PREFIX);
            String physical = written.substring(tempTopic ? TEMP_TOPIC_PREFIX.length() : TEMP_QUEUE_PREFIX.length());
            if (physical.isBlank()) {
                throw new BrokerException("Invalid ActiveMQ destination '" + written + "': no name after the prefix",
                        false);
            }
            return new JmsDestination(written, physical, tempTopic, true);
        }
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
        if (temporary) {
            return topic ? new ActiveMQTempTopic(name) : new ActiveMQTempQueue(name);
        }
        return topic ? new ActiveMQTopic(name) : new ActiveMQQueue(name);
    }

    /** The destination with a consumer prefetch option, as ActiveMQ reads it from the destination name. */
    ActiveMQDestination toJmsWithPrefetch(int prefetch) {
        String withOption = name + "?consumer.prefetchSize=" + prefetch;
        return topic ? new ActiveMQTopic(withOption) : new ActiveMQQueue(withOption);
    }
}
