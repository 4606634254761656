package dev.idem.adapter.activemq;

import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import jakarta.jms.ObjectMessage;
import jakarta.jms.Session;
import jakarta.jms.StreamMessage;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.command.CommandTypes;

/** Converts between JMS messages and the SPI's records. Stateless. */
final class JmsMessages {

    /** The JMS property holding the message key (JMS's group id). */
    static final String GROUP_ID = "JMSXGroupID";
    /** The header {@link OutboundMessage#messageId()} is written to, since JMS lets no sender choose JMSMessageID. */
    static final String MESSAGE_ID_HEADER = "message-id";
    static final String CORRELATION_ID_HEADER = "JMSCorrelationID";
    static final String TYPE_HEADER = "JMSType";

    private static final byte[] EMPTY = new byte[0];

    private JmsMessages() {
    }

    /**
     * The SPI view of a received message. Headers are the message's properties as text, without the
     * provider's {@code JMSX*} properties (the group id is the key, the delivery count its own field), plus
     * {@code JMSCorrelationID} and {@code JMSType} when set.
     */
    static InboundMessage inbound(String source, Message m) throws JMSException {
        Map<String, String> headers = new LinkedHashMap<>();
        for (Enumeration<?> names = m.getPropertyNames(); names.hasMoreElements(); ) {
            String name = (String) names.nextElement();
            if (!name.startsWith("JMSX")) {
                Object value = m.getObjectProperty(name);
                if (value != null) {
                    headers.put(name, value.toString());
                }
            }
        }
        if (m.getJMSCorrelationID() != null) {
            headers.put(CORRELATION_ID_HEADER, m.getJMSCorrelationID());
        }
        if (m.getJMSType() != null) {
            headers.put(TYPE_HEADER, m.getJMSType());
        }
        int deliveryCount = m.propertyExists("JMSXDeliveryCount") ? m.getIntProperty("JMSXDeliveryCount") : 0;
        String group = m.getStringProperty(GROUP_ID);
        ReplyAddress replyTo = m.getJMSReplyTo() instanceof ActiveMQDestination to
                ? ReplyAddress.of(JmsDestination.written(to), m.getJMSCorrelationID()) : null;
        return new InboundMessage(source, null, group, headers, payload(m), m.getJMSMessageID(),
                m.getJMSRedelivered(), deliveryCount, group, replyTo);
    }

    /**
     * The body: a BytesMessage's bytes, a TextMessage's text as UTF-8, a MapMessage as a JSON object (see
     * {@link MapMessageJson}), nothing for a body-less Message.
     *
     * @throws IllegalArgumentException for any other type ({@link #unsupportedType} names it); never reads its body
     */
    static byte[] payload(Message m) throws JMSException {
        if (m instanceof BytesMessage bytes) {
            bytes.reset();
            byte[] body = new byte[(int) bytes.getBodyLength()];
            bytes.readBytes(body);
            return body;
        }
        if (m instanceof TextMessage text) {
            return text.getText() == null ? EMPTY : text.getText().getBytes(StandardCharsets.UTF_8);
        }
        if (m instanceof MapMessage map) {
            return MapMessageJson.toJson(map);
        }
        String unsupported = unsupportedType(m);
        if (unsupported != null) {
            throw new IllegalArgumentException("Cannot read the body of " + unsupported);
        }
        return EMPTY;
    }

    /**
     * What kind of message {@code m} is when its body cannot be handed to a handler, else {@code null}. Readable
     * are BytesMessage, TextMessage, MapMessage and the body-less Message. Decided by type alone: the body of an
     * ObjectMessage is never deserialized (that would run code of the sender's choosing; so, too, would its
     * {@code toString()}).
     */
    static String unsupportedType(Message m) {
        if (m instanceof BytesMessage || m instanceof TextMessage || m instanceof MapMessage) {
            return null;
        }
        if (m instanceof ObjectMessage) {
            return "a JMS ObjectMessage: its body is a serialized Java object, which Idem never deserializes "
                    + "(that would run code of the sender's choosing)";
        }
        if (m instanceof StreamMessage) {
            return "a JMS StreamMessage: its body is a sequence of unnamed typed values, which Idem does not convert";
        }
        if (m instanceof ActiveMQMessage amq && amq.getDataStructureType() == CommandTypes.ACTIVEMQ_MESSAGE) {
            return null;
        }
        return "a message of type " + m.getClass().getSimpleName() + ", whose body Idem cannot read";
    }

    /** A BytesMessage for {@link dev.idem.spi.BrokerAdapter#publish}. */
    static BytesMessage outbound(Session session, OutboundMessage message) throws JMSException {
        BytesMessage m = session.createBytesMessage();
        m.writeBytes(message.payload());
        for (Map.Entry<String, String> h : message.headers().entrySet()) {
            setHeader(m, h.getKey(), h.getValue());
        }
        if (message.messageId() != null && !message.headers().containsKey(MESSAGE_ID_HEADER)) {
            m.setStringProperty(MESSAGE_ID_HEADER, message.messageId());
        }
        if (message.key() != null) {
            m.setStringProperty(GROUP_ID, message.key());
        }
        return m;
    }

    /**
     * The dead-lettered copy: the original body, key and headers, the reason's headers and the origin
     * (source and JMSMessageID).
     */
    static BytesMessage deadLetter(Session session, InboundMessage original, DeadLetterReason reason)
            throws JMSException {
        BytesMessage m = session.createBytesMessage();
        m.writeBytes(original.payload());
        for (Map.Entry<String, String> h : original.headers().entrySet()) {
            setHeader(m, h.getKey(), h.getValue());
        }
        if (original.key() != null) {
            m.setStringProperty(GROUP_ID, original.key());
        }
        for (Map.Entry<String, String> h : reason.toHeaders().entrySet()) {
            m.setStringProperty(h.getKey(), h.getValue());
        }
        m.setStringProperty(DeadLetterReason.ORIGIN_SOURCE, original.source());
        if (original.brokerMessageId() != null) {
            m.setStringProperty(DeadLetterReason.ORIGIN_MESSAGE_ID, original.brokerMessageId());
        }
        return m;
    }

    /**
     * The dead-lettered copy of a message the adapter could not hand to a handler: a copy of the original
     * message itself, of its own type, with its body bytes as they came (an ObjectMessage stays serialized and
     * is never deserialized), its properties and key, plus the reason's headers and the origin (source and
     * JMSMessageID). It does not expire.
     *
     * @throws JMSException if {@code original} is not an ActiveMQ message (the client only delivers those)
     */
    static Message unreadableCopy(Message original, String source, DeadLetterReason reason) throws JMSException {
        if (!(original instanceof ActiveMQMessage amq)) {
            throw new JMSException("Cannot copy a " + original.getClass().getName() + " for dead-lettering");
        }
        ActiveMQMessage copy = (ActiveMQMessage) amq.copy();
        copy.setReadOnlyProperties(false);
        copy.setRedeliveryCounter(0);
        // Charged to the destination the broker stores the copy in, not to the one the original came from.
        copy.setMemoryUsage(null);
        ActiveMQDestination from = amq.getDestination();
        if (from != null) {
            copy.setOriginalDestination(from);
        }
        for (Map.Entry<String, String> h : reason.toHeaders().entrySet()) {
            copy.setStringProperty(h.getKey(), h.getValue());
        }
        copy.setStringProperty(DeadLetterReason.ORIGIN_SOURCE, source);
        if (original.getJMSMessageID() != null) {
            copy.setStringProperty(DeadLetterReason.ORIGIN_MESSAGE_ID, original.getJMSMessageID());
        }
        return copy;
    }

    private static void setHeader(Message m, String name, String value) throws JMSException {
        switch (name) {
            case CORRELATION_ID_HEADER -> m.setJMSCorrelationID(value);
            case ReplyAddress.CORRELATION_ID_HEADER -> m.setJMSCorrelationID(
                    new String(ReplyAddress.correlationFromHeader(value), StandardCharsets.UTF_8));
            case TYPE_HEADER -> m.setJMSType(value);
            default -> m.setStringProperty(name, value);
        }
    }
}
