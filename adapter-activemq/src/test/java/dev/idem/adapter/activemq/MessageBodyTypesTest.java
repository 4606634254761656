package dev.idem.adapter.activemq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.ObjectMessage;
import jakarta.jms.Session;
import jakarta.jms.StreamMessage;
import jakarta.jms.TextMessage;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.command.ActiveMQObjectMessage;
import org.apache.activemq.util.ByteSequence;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * JMS body types other than bytes and text. Regression: ObjectMessage, MapMessage and StreamMessage reached the
 * handler with an empty payload and were acknowledged, their content lost. Now a MapMessage reaches it as JSON,
 * and an ObjectMessage or StreamMessage never does: it is dead-lettered with the cause
 * {@code unsupported-message-type}, body intact, and an ObjectMessage is never deserialized.
 */
class MessageBodyTypesTest {

    private final String queue = "bodies-" + UUID.randomUUID().toString().substring(0, 8);
    private Connection jms;
    private Session session;

    /** Serializable whose deserialization is recorded: the adapter must never deserialize an ObjectMessage. */
    static final class Canary implements Serializable {
        private static final long serialVersionUID = 1L;
        static final AtomicBoolean deserialized = new AtomicBoolean();
        final String text;

        Canary(String text) {
            this.text = text;
        }

        private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
            deserialized.set(true);
            in.defaultReadObject();
        }
    }

    @BeforeEach
    void connect() throws JMSException {
        jms = new ActiveMQConnectionFactory(TestBroker.shared().tcpUrl()).createConnection();
        jms.start();
        session = jms.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Canary.deserialized.set(false);
    }

    @AfterEach
    void close() throws JMSException {
        jms.close();
    }

    /** An adapter that would deserialize any class if it ever called getObject(): the canary is trusted. */
    private static BrokerAdapter adapter() {
        return TestBroker.adapter(TestBroker.shared().config().with("client", Map.of("trustAllPackages", "true")));
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void handlerSeesAMapMessageAsJsonAndNeverAnObjectOrStreamMessageWhichAreDeadLetteredWithTheirBodies()
            throws Exception {
        String deadLetter = queue + ".rejected";
        ObjectMessage object = session.createObjectMessage(new Canary("secret"));
        object.setStringProperty("message-id", "object-1");
        object.setStringProperty("tenant", "acme");
        object.setStringProperty("JMSXGroupID", "order-7");
        StreamMessage stream = session.createStreamMessage();
        stream.writeString("first");
        stream.writeInt(42);
        stream.setStringProperty("message-id", "stream-1");
        MapMessage map = session.createMapMessage();
        map.setString("orderId", "order-9");
        map.setInt("quantity", 3);
        map.setStringProperty("message-id", "map-1");
        send(object, stream, map);

        BrokerAdapter adapter = adapter();
        List<String> handled = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = Idem.builder().configYaml("""
                        broker: { type: activemq }
                        store: { type: caffeine }
                        pipelines:
                          orders:
                            source: %s
                            dead-letter: %s
                        """.formatted(queue, deadLetter))
                .env(Map.of())
                .broker("activemq", adapter)
                .handler("orders", (message, context) -> handled.add(message.idempotencyKey().orElseThrow() + " "
                        + new String(message.payload(), StandardCharsets.UTF_8)))
                .start();
        List<Message> dead;
        try {
            dead = receiveAll(deadLetter, 2);
            await().atMost(Duration.ofSeconds(30)).until(() -> handled.size() == 1);
        } finally {
            runtime.stop(Duration.ofSeconds(10));
            adapter.close();
        }
        assertThat(handled).containsExactly("map-1 {\"orderId\":\"order-9\",\"quantity\":3}");

        ObjectMessage deadObject = (ObjectMessage) dead.stream().filter(m -> m instanceof ObjectMessage).findFirst()
                .orElseThrow();
        assertThat(bytes((ActiveMQObjectMessage) deadObject)).as("the serialized body, copied as it came")
                .isEqualTo(bytes((ActiveMQObjectMessage) object));
        assertThat(deadObject.getStringProperty("tenant")).isEqualTo("acme");
        assertThat(deadObject.getStringProperty("JMSXGroupID")).isEqualTo("order-7");
        assertDeadLettered(deadObject, object.getJMSMessageID(), "ObjectMessage");

        StreamMessage deadStream = (StreamMessage) dead.stream().filter(m -> m instanceof StreamMessage).findFirst()
                .orElseThrow();
        assertThat(deadStream.readString()).isEqualTo("first");
        assertThat(deadStream.readInt()).isEqualTo(42);
        assertDeadLettered(deadStream, stream.getJMSMessageID(), "StreamMessage");

        assertThat(Canary.deserialized).as("the ObjectMessage was never deserialized").isFalse();
        expectOnlySentinel();
    }

    private static byte[] bytes(ActiveMQObjectMessage m) {
        ByteSequence content = m.getContent();
        return Arrays.copyOfRange(content.getData(), content.getOffset(), content.getOffset() + content.getLength());
    }

    private void assertDeadLettered(Message m, String originalId, String type) throws JMSException {
        assertThat(m.getStringProperty(DeadLetterReason.HEADER_CAUSE)).isEqualTo("unsupported-message-type");
        assertThat(m.getStringProperty(DeadLetterReason.HEADER_DETAIL)).contains(type);
        assertThat(m.getStringProperty(DeadLetterReason.HEADER_ATTEMPTS)).isEqualTo("0");
        assertThat(m.getStringProperty(DeadLetterReason.HEADER_PIPELINE)).isEqualTo("orders");
        assertThat(m.getStringProperty(DeadLetterReason.ORIGIN_SOURCE)).isEqualTo(queue);
        assertThat(m.getStringProperty(DeadLetterReason.ORIGIN_MESSAGE_ID)).isEqualTo(originalId);
    }

    @Test
    void mapMessageValuesOfEveryTypeBecomeOneJsonObjectWithSortedNames() throws Exception {
        MapMessage map = session.createMapMessage();
        map.setString("s", "quote \" backslash \\ newline \n tab \t bell \u0007 é ✓");
        map.setBoolean("bool", true);
        map.setByte("byte", (byte) -8);
        map.setShort("short", (short) 300);
        map.setChar("char", 'x');
        map.setInt("int", -7);
        map.setLong("long", 9_007_199_254_740_993L);
        map.setFloat("float", 0.1f);
        map.setDouble("double", 2.5e-8);
        map.setDouble("nan", Double.NaN);
        map.setDouble("inf", Double.NEGATIVE_INFINITY);
        map.setBytes("bytes", new byte[] {0, 1, 2, (byte) 0xff});
        map.setString("null", null);
        map.setObject("nested", new HashMap<>(Map.of("b", 2, "a", List.of("x", 1))));
        send(map);

        BrokerAdapter adapter = adapter();
        try (Inbox inbox = new Inbox(adapter, "json", queue, null)) {
            Delivery d = inbox.next();
            assertThat(Inbox.text(d)).isEqualTo("{"
                    + "\"bool\":true,\"byte\":-8,\"bytes\":\"AAEC/w==\",\"char\":\"x\",\"double\":2.5E-8,"
                    + "\"float\":0.1,\"inf\":\"-Infinity\",\"int\":-7,\"long\":9007199254740993,\"nan\":\"NaN\","
                    + "\"nested\":{\"a\":[\"x\",1],\"b\":2},\"null\":null,"
                    + "\"s\":\"quote \\\" backslash \\\\ newline \\n tab \\t bell \\u0007 é ✓\",\"short\":300}");
            d.ack();
            inbox.expectOnlySentinel(adapter, queue);
        } finally {
            adapter.close();
        }
    }

    @Test
    void aBodylessMessageIsHandedOverWithAnEmptyPayloadAndItsProperties() throws Exception {
        Message plain = session.createMessage();
        plain.setStringProperty("event", "ping");
        send(plain);
        BrokerAdapter adapter = adapter();
        try (Inbox inbox = new Inbox(adapter, "plain", queue, null)) {
            Delivery d = inbox.next();
            assertThat(d.message().payload()).isEmpty();
            assertThat(d.message().headers()).containsEntry("event", "ping");
            d.ack();
            inbox.expectOnlySentinel(adapter, queue);
        } finally {
            adapter.close();
        }
    }

    /** Sends a sentinel and asserts it is the first message on the source: nothing else was left there. */
    private void expectOnlySentinel() throws JMSException {
        String marker = "sentinel-" + UUID.randomUUID();
        send(session.createTextMessage(marker));
        try (MessageConsumer consumer = session.createConsumer(session.createQueue(queue))) {
            Message m = consumer.receive(30_000);
            assertThat(m).as("the sentinel within 30s").isInstanceOf(TextMessage.class);
            assertThat(((TextMessage) m).getText()).as("the first message on the source").isEqualTo(marker);
        }
    }

    private void send(Message... messages) throws JMSException {
        MessageProducer producer = session.createProducer(session.createQueue(queue));
        for (Message m : messages) {
            producer.send(m);
        }
        producer.close();
    }

    /** Receives {@code count} messages from {@code destination} (waiting up to 30s for each), then any more. */
    private List<Message> receiveAll(String destination, int count) throws JMSException {
        List<Message> received = new ArrayList<>();
        try (MessageConsumer consumer = session.createConsumer(session.createQueue(destination))) {
            for (int i = 0; i < count; i++) {
                Message m = consumer.receive(30_000);
                assertThat(m).as("message %d of %d on '%s' within 30s", i + 1, count, destination).isNotNull();
                received.add(m);
            }
            for (Message m = consumer.receive(500); m != null; m = consumer.receive(500)) {
                received.add(m);
            }
        }
        return received;
    }
}
