package dev.idem.adapter.activemq;

import static dev.idem.adapter.activemq.Inbox.text;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.Destination;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TemporaryQueue;
import jakarta.jms.TemporaryTopic;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Request/reply on ActiveMQ: a request's {@code JMSReplyTo} (queue, topic, temporary queue or topic) and
 * {@code JMSCorrelationID} become {@link InboundMessage#replyTo()}, a published reply's
 * {@link ReplyAddress#CORRELATION_ID_HEADER} becomes {@code JMSCorrelationID} and no property, and a reply to a
 * requester's temporary queue reaches it.
 */
class ActiveMqReplyAddressTest {

    private static final long WAIT_MS = 10_000;

    private final List<BrokerAdapter> adapters = new ArrayList<>();
    private final String suffix = UUID.randomUUID().toString().substring(0, 8);
    private Connection requester;
    private Session session;

    @BeforeEach
    void connectRequester() throws JMSException {
        requester = new ActiveMQConnectionFactory(TestBroker.shared().tcpUrl()).createConnection();
        requester.start();
        session = requester.createSession(false, Session.AUTO_ACKNOWLEDGE);
    }

    @AfterEach
    void close() throws JMSException {
        adapters.forEach(BrokerAdapter::close);
        requester.close();
    }

    private BrokerAdapter adapter() {
        BrokerAdapter adapter = TestBroker.shared().adapter();
        adapters.add(adapter);
        return adapter;
    }

    /** Sends a request with the requester's own JMS client; {@code replyTo} and {@code correlationId} may be null. */
    private void request(String queue, String body, Destination replyTo, String correlationId) throws JMSException {
        TextMessage m = session.createTextMessage(body);
        m.setJMSReplyTo(replyTo);
        m.setJMSCorrelationID(correlationId);
        try (MessageProducer producer = session.createProducer(session.createQueue(queue))) {
            producer.send(m);
        }
    }

    private static InboundMessage next(Inbox inbox, String expectedBody) throws InterruptedException {
        Delivery d = inbox.next();
        assertThat(text(d)).isEqualTo(expectedBody);
        d.ack();
        return d.message();
    }

    @Test
    void aRequestsReplyToAndCorrelationIdBecomeItsReplyAddress() throws Exception {
        String requests = "requests-" + suffix;
        TemporaryQueue tempQueue = session.createTemporaryQueue();
        TemporaryTopic tempTopic = session.createTemporaryTopic();
        request(requests, "to-queue", session.createQueue("replies-" + suffix), "corr-1");
        request(requests, "to-topic", session.createTopic("reply-topic-" + suffix), "corr-2");
        request(requests, "to-temp-queue", tempQueue, "corr-3");
        request(requests, "to-temp-topic", tempTopic, null);
        request(requests, "correlation-only", null, "corr-5");
        request(requests, "plain", null, null);

        BrokerAdapter adapter = adapter();
        try (Inbox inbox = new Inbox(adapter, "replier", requests, null)) {
            assertThat(next(inbox, "to-queue").replyTo())
                    .isEqualTo(ReplyAddress.of("queue://replies-" + suffix, "corr-1"));
            assertThat(next(inbox, "to-topic").replyTo())
                    .isEqualTo(ReplyAddress.of("topic://reply-topic-" + suffix, "corr-2"));
            ReplyAddress toTempQueue = next(inbox, "to-temp-queue").replyTo();
            assertThat(toTempQueue.destination()).isEqualTo("temp-queue://" + tempQueue.getQueueName());
            assertThat(toTempQueue.correlationId()).isEqualTo("corr-3".getBytes(StandardCharsets.UTF_8));
            ReplyAddress toTempTopic = next(inbox, "to-temp-topic").replyTo();
            assertThat(toTempTopic.destination()).isEqualTo("temp-topic://" + tempTopic.getTopicName());
            assertThat(toTempTopic.correlationId()).isEmpty();
            assertThat(next(inbox, "correlation-only").replyTo()).as("no JMSReplyTo, no reply").isNull();
            assertThat(next(inbox, "plain").replyTo()).isNull();
            inbox.expectOnlySentinel(adapter, requests);
        }
    }

    @Test
    void publishSetsJmsCorrelationIdFromTheCorrelationHeaderAndSendsNoSuchProperty() throws Exception {
        String replies = "replies-" + suffix;
        try (MessageConsumer consumer = session.createConsumer(session.createQueue(replies))) {
            ReplyAddress address = ReplyAddress.of("queue://" + replies, "corr-\u00e9-1");
            adapter().publish(address.destination(), new OutboundMessage(null, null,
                    Map.of(ReplyAddress.CORRELATION_ID_HEADER, address.correlationHeader(), "tenant", "acme"),
                    "pong".getBytes(StandardCharsets.UTF_8)));
            adapter().publish(replies, new OutboundMessage(null, null, Map.of("tenant", "acme"), new byte[0]));

            Message reply = consumer.receive(WAIT_MS);
            assertThat(reply).as("the reply within %d ms", WAIT_MS).isNotNull();
            assertThat(body(reply)).isEqualTo("pong");
            assertThat(reply.getJMSCorrelationID()).isEqualTo("corr-\u00e9-1");
            assertThat(reply.propertyExists(ReplyAddress.CORRELATION_ID_HEADER)).isFalse();
            assertThat(reply.getStringProperty("tenant")).isEqualTo("acme");

            Message plain = consumer.receive(WAIT_MS);
            assertThat(plain).isNotNull();
            assertThat(plain.getJMSCorrelationID()).as("no correlation header, no correlation ID").isNull();
        }
    }

    @Test
    void aReplyToARequestersTemporaryQueueReachesTheRequester() throws Exception {
        String requests = "rpc-" + suffix;
        // The JMS request/reply pattern: the requester's own temporary queue, the reply matched by correlation ID.
        TemporaryQueue replyQueue = session.createTemporaryQueue();
        try (MessageConsumer replies = session.createConsumer(replyQueue)) {
            request(requests, "ping", replyQueue, "rpc-1");

            BrokerAdapter adapter = adapter();
            try (Inbox inbox = new Inbox(adapter, "replier", requests, null)) {
                Delivery request = inbox.next();
                ReplyAddress replyTo = request.message().replyTo();
                assertThat(replyTo).isEqualTo(ReplyAddress.of("temp-queue://" + replyQueue.getQueueName(), "rpc-1"));
                adapter.publish(replyTo.destination(), new OutboundMessage(null, null,
                        Map.of(ReplyAddress.CORRELATION_ID_HEADER, replyTo.correlationHeader()),
                        "pong".getBytes(StandardCharsets.UTF_8)));
                request.ack();
            }

            Message reply = replies.receive(WAIT_MS);
            assertThat(reply).as("the reply within %d ms", WAIT_MS).isNotNull();
            assertThat(body(reply)).isEqualTo("pong");
            assertThat(reply.getJMSCorrelationID()).isEqualTo("rpc-1");
            assertThat(reply.propertyExists(ReplyAddress.CORRELATION_ID_HEADER)).isFalse();
            assertThat(replies.receive(200)).as("one reply only").isNull();
        }
    }

    @Test
    void aReplyToARequestersTemporaryTopicReachesTheRequester() throws Exception {
        String requests = "rpc-topic-" + suffix;
        TemporaryTopic replyTopic = session.createTemporaryTopic();
        try (MessageConsumer replies = session.createConsumer(replyTopic)) {
            request(requests, "ping", replyTopic, "rpc-2");

            BrokerAdapter adapter = adapter();
            try (Inbox inbox = new Inbox(adapter, "replier", requests, null)) {
                Delivery request = inbox.next();
                ReplyAddress replyTo = request.message().replyTo();
                assertThat(replyTo.destination()).isEqualTo("temp-topic://" + replyTopic.getTopicName());
                adapter.publish(replyTo.destination(), new OutboundMessage(null, null,
                        Map.of(ReplyAddress.CORRELATION_ID_HEADER, replyTo.correlationHeader()),
                        "pong".getBytes(StandardCharsets.UTF_8)));
                request.ack();
            }

            Message reply = replies.receive(WAIT_MS);
            assertThat(reply).as("the reply within %d ms", WAIT_MS).isNotNull();
            assertThat(body(reply)).isEqualTo("pong");
            assertThat(reply.getJMSCorrelationID()).isEqualTo("rpc-2");
        }
    }

    /** The adapter publishes BytesMessages. */
    private static String body(Message m) throws JMSException {
        assertThat(m).isInstanceOf(BytesMessage.class);
        BytesMessage bytes = (BytesMessage) m;
        byte[] body = new byte[(int) bytes.getBodyLength()];
        bytes.readBytes(body);
        return new String(body, StandardCharsets.UTF_8);
    }
}
