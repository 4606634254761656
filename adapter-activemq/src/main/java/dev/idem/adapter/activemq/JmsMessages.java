package dev.idem.adapter.activemq;

import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;

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
        return new InboundMessage(source, null, m.getStringProperty(GROUP_ID), headers, payload(m),
                m.getJMSMessageID(), m.getJMSRedelivered(), deliveryCount);
    }

    /** The body: a BytesMessage's bytes, a TextMessage's text as UTF-8, else empty. */
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
        return EMPTY;
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

    private static void setHeader(Message m, String name, String value) throws JMSException {
        switch (name) {
            case CORRELATION_ID_HEADER -> m.setJMSCorrelationID(value);
            case TYPE_HEADER -> m.setJMSType(value);
            default -> m.setStringProperty(name, value);
        }
    }
}
