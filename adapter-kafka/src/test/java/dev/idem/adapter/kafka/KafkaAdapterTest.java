package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Kafka-specific behaviour of the adapter against a real broker: commits, retries, dead letters, failures. */
class KafkaAdapterTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    private final EmbeddedKafka kafka = EmbeddedKafka.shared();
    private final List<String> topics = new ArrayList<>();
    private KafkaAdapter adapter;
    private String topic;

    @BeforeEach
    void createTopic() {
        adapter = KafkaTestSupport.adapter(KafkaTestSupport.config());
        topic = topic(1);
    }

    @AfterEach
    void cleanUp() {
        adapter.close();
        topics.forEach(kafka::deleteTopic);
    }

    private String topic(int partitions) {
        String name = "idem-test-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(name, partitions);
        topics.add(name);
        return name;
    }

    /** A subscription whose deliveries queue up unsettled. */
    private final class Receiver implements AutoCloseable {
        final BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        final String group;
        final Subscription subscription;

        Receiver(String deadLetter) {
            group = "test-" + topic;
            subscription = adapter.subscribe(new SubscriptionRequest(group, topic, 100, deadLetter), received::addAll);
        }

        Delivery next() throws InterruptedException {
            Delivery d = received.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(d).as("a delivery within %s", WAIT).isNotNull();
            return d;
        }

        /** Publishes a sentinel, asserts it is the next delivery and acks it: nothing else was waiting. */
        void expectOnlySentinel() throws InterruptedException {
            String marker = "sentinel-" + UUID.randomUUID();
            adapter.publish(topic, message(marker));
            Delivery d = next();
            assertThat(text(d.message())).isEqualTo(marker);
            d.ack();
        }

        long committed() {
            return kafka.committed(group, new TopicPartition(topic, 0));
        }

        @Override
        public void close() {
            subscription.close();
        }
    }

    private static OutboundMessage message(String body) {
        return new OutboundMessage(null, null, Map.of(), body.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(InboundMessage m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    @Test
    void commitsOnlyTheHighestContiguousAckedOffsetWhenAcksComeOutOfOrder() throws Exception {
        for (int i = 0; i < 3; i++) {
            adapter.publish(topic, message("m" + i));
        }
        Receiver first = new Receiver(null);
        Delivery d0 = first.next();
        Delivery d1 = first.next();
        Delivery d2 = first.next();
        d2.ack();
        d1.ack();
        first.close();
        assertThat(first.committed()).as("offset 0 was never acked, so closing commits nothing").isEqualTo(-1);

        try (Receiver second = new Receiver(null)) {
            List<Delivery> again = List.of(second.next(), second.next(), second.next());
            assertThat(again).extracting(d -> d.message().brokerMessageId())
                    .containsExactly(d0.message().brokerMessageId(), d1.message().brokerMessageId(),
                            d2.message().brokerMessageId());
            again.get(2).ack();
            again.get(1).ack();
            again.get(0).ack();
            await().atMost(WAIT).until(second::committed, offset -> offset == 3);
        }
    }

    @Test
    void retryLaterSeeksBackAndRedeliversTheRestOfThePartitionWithCounts() throws Exception {
        for (int i = 0; i < 3; i++) {
            adapter.publish(topic, message("m" + i));
        }
        try (Receiver receiver = new Receiver(null)) {
            Delivery d0 = receiver.next();
            Delivery d1 = receiver.next();
            Delivery d2 = receiver.next();
            assertThat(d1.message().deliveryCount()).isEqualTo(1);
            d0.ack();
            d1.retryLater(Duration.ofMillis(200));

            Delivery again1 = receiver.next();
            Delivery again2 = receiver.next();
            assertThat(text(again1.message())).isEqualTo("m1");
            assertThat(again1.message().redelivered()).isTrue();
            assertThat(again1.message().deliveryCount()).isEqualTo(2);
            assertThat(text(again2.message())).as("the later unfinished offset comes again too").isEqualTo("m2");
            assertThat(again2.message().deliveryCount()).isEqualTo(2);

            d2.retryLater(Duration.ZERO);
            again1.ack();
            again2.ack();
            receiver.expectOnlySentinel();
            await().atMost(WAIT).until(receiver::committed, offset -> offset == 4);
        }
    }

    @Test
    void deadLetterCopiesKeyPayloadHeadersReasonAndOriginThenCommits() throws Exception {
        String deadLetters = topic + ".DLQ";
        kafka.createTopic(deadLetters, 1);
        topics.add(deadLetters);
        adapter.publish(topic, new OutboundMessage("id-7", "order-7", Map.of("tenant", "acme"),
                "poison".getBytes(StandardCharsets.UTF_8)));
        try (Receiver receiver = new Receiver(null)) {
            receiver.next().deadLetter(new DeadLetterReason("handler-failed", "boom", 3, "billing"));

            BlockingQueue<Delivery> dead = new LinkedBlockingQueue<>();
            try (Subscription dlq = adapter.subscribe(new SubscriptionRequest("dlq-reader", deadLetters, 10, null),
                    dead::addAll)) {
                Delivery copy = dead.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                assertThat(copy).isNotNull();
                InboundMessage m = copy.message();
                assertThat(text(m)).isEqualTo("poison");
                assertThat(m.key()).isEqualTo("order-7");
                assertThat(m.headers())
                        .containsEntry("message-id", "id-7")
                        .containsEntry("tenant", "acme")
                        .containsEntry(DeadLetterReason.HEADER_CAUSE, "handler-failed")
                        .containsEntry(DeadLetterReason.HEADER_DETAIL, "boom")
                        .containsEntry(DeadLetterReason.HEADER_ATTEMPTS, "3")
                        .containsEntry(DeadLetterReason.HEADER_PIPELINE, "billing")
                        .containsEntry(DeadLetterReason.ORIGIN_SOURCE, topic)
                        .containsEntry(DeadLetterReason.ORIGIN_PARTITION, "0")
                        .containsEntry(DeadLetterReason.ORIGIN_OFFSET, "0")
                        .containsEntry(DeadLetterReason.ORIGIN_MESSAGE_ID, topic + "-0-0");
                copy.ack();
            }
            await().atMost(WAIT).until(receiver::committed, offset -> offset == 1);
        }
    }

    @Test
    void aDeadLetterCopyTheBrokerRejectsFailsAndLeavesTheOriginalUnacked() throws Exception {
        adapter.close();
        adapter = KafkaTestSupport.adapter(KafkaTestSupport.config().with("producer.delivery-timeout", "2s"));
        adapter.publish(topic, message("poison"));
        Receiver receiver = new Receiver("no such topic!");
        Delivery d = receiver.next();
        assertThatThrownBy(() -> d.deadLetter(new DeadLetterReason("handler-failed", "boom", 1, "p")))
                .isInstanceOf(BrokerException.class)
                .hasMessageContaining("no such topic!");
        receiver.close();
        assertThat(receiver.committed()).as("a failed dead-letter copy is not done").isEqualTo(-1);

        try (Receiver again = new Receiver(null)) {
            assertThat(text(again.next().message())).isEqualTo("poison");
        }
        assertThatThrownBy(() -> adapter.publish("no such topic!", message("x")))
                .isInstanceOf(BrokerException.class);
    }

    @Test
    void publishSetsTheMessageIdHeaderAndTheKey() throws Exception {
        adapter.publish(topic, new OutboundMessage("id-1", "k", Map.of("message-id", "ignored", "a", "b"),
                "x".getBytes(StandardCharsets.UTF_8)));
        adapter.publish(topic, new OutboundMessage(null, null, Map.of(), new byte[0]));
        try (Receiver receiver = new Receiver(null)) {
            InboundMessage first = receiver.next().message();
            assertThat(first.headers()).containsEntry("message-id", "id-1").containsEntry("a", "b").hasSize(2);
            assertThat(first.key()).isEqualTo("k");
            assertThat(first.partition()).isEqualTo(topic + "-0");
            assertThat(first.brokerMessageId()).isEqualTo(topic + "-0-0");
            InboundMessage second = receiver.next().message();
            assertThat(second.key()).isNull();
            assertThat(second.payload()).isEmpty();
        }
    }

    @Test
    void healthCheckPassesAgainstTheBrokerAndFailsWithBrokerExceptionWithoutOne() throws Exception {
        adapter.checkHealth();
        int deadPort;
        try (var socket = new ServerSocket(0)) {
            deadPort = socket.getLocalPort();
        }
        try (KafkaAdapter nowhere = KafkaTestSupport.adapter(KafkaTestSupport.config()
                .with("bootstrap-servers", List.of("127.0.0.1:" + deadPort)))) {
            assertThatThrownBy(nowhere::checkHealth).isInstanceOf(BrokerException.class)
                    .hasMessageContaining("127.0.0.1:" + deadPort);
        }
    }
}
