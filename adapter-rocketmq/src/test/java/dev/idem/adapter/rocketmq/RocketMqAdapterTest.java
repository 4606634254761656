package dev.idem.adapter.rocketmq;

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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** RocketMQ-specific behaviour of the adapter against a real broker: commits, retries, dead letters, filters. */
class RocketMqAdapterTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    private final EmbeddedRocketMq rocketMq = EmbeddedRocketMq.shared();
    private final List<String> topics = new ArrayList<>();
    private RocketMqAdapter adapter;
    private String topic;

    @BeforeEach
    void createTopic() {
        adapter = RocketMqTestSupport.adapter(RocketMqTestSupport.config());
        topic = topic(1);
    }

    @AfterEach
    void cleanUp() {
        adapter.close();
        topics.forEach(rocketMq::deleteTopic);
    }

    private String topic(int queues) {
        String name = "idem-test-" + UUID.randomUUID().toString().substring(0, 8);
        rocketMq.createTopic(name, queues);
        topics.add(name);
        return name;
    }

    /** A subscription whose deliveries queue up unsettled. */
    private final class Receiver implements AutoCloseable {
        final BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        final String group;
        final Subscription subscription;

        Receiver(String source, String deadLetter) {
            group = "test-" + topic;
            subscription = adapter.subscribe(new SubscriptionRequest(group, source, 100, deadLetter), received::addAll);
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
            return rocketMq.committed(group, topic, 0);
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
        Receiver first = new Receiver(topic, null);
        Delivery d0 = first.next();
        Delivery d1 = first.next();
        Delivery d2 = first.next();
        d2.ack();
        d1.ack();
        first.close();
        assertThat(first.committed()).as("offset 0 was never acked, so closing commits nothing past it")
                .isLessThanOrEqualTo(0);

        try (Receiver second = new Receiver(topic, null)) {
            List<Delivery> again = List.of(second.next(), second.next(), second.next());
            assertThat(again).extracting(d -> d.message().brokerMessageId()).as("UNIQ_KEY, the same on redelivery")
                    .containsExactly(d0.message().brokerMessageId(), d1.message().brokerMessageId(),
                            d2.message().brokerMessageId());
            again.get(2).ack();
            again.get(1).ack();
            again.get(0).ack();
            await().atMost(WAIT).until(second::committed, offset -> offset == 3);
        }
    }

    @Test
    void closingCommitsWhatIsFinishedBeforeItReturnsAndNothingElse() throws Exception {
        adapter.close();
        // No periodic write during the test (the client's own first one comes 10 s after it starts): only closing
        // commits, and the consumer's shutdown, which would write the offsets too, runs in the background.
        adapter = RocketMqTestSupport.adapter(RocketMqTestSupport.config().with("commit-interval", "5m"));
        for (int i = 0; i < 4; i++) {
            adapter.publish(topic, message("m" + i));
        }
        Receiver receiver = new Receiver(topic, null);
        List<Delivery> received = List.of(receiver.next(), receiver.next(), receiver.next(), receiver.next());
        received.get(0).ack();
        received.get(1).ack();
        received.get(3).ack();
        receiver.close();
        assertThat(receiver.committed()).as("m0 and m1 finished, m2 not: committed by the time close returned")
                .isEqualTo(2);
    }

    @Test
    void retryLaterSeeksBackAndRedeliversTheRestOfTheQueueWithCounts() throws Exception {
        for (int i = 0; i < 3; i++) {
            adapter.publish(topic, message("m" + i));
        }
        try (Receiver receiver = new Receiver(topic, null)) {
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
            assertThat(again1.message().brokerMessageId()).isEqualTo(d1.message().brokerMessageId());
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
    void deadLetterCopiesKeysTagPayloadPropertiesReasonAndOriginThenCommits() throws Exception {
        String deadLetters = topic + "-DLQ";
        rocketMq.createTopic(deadLetters, 1);
        topics.add(deadLetters);
        adapter.publish(topic, new OutboundMessage("id-7", "order-7", Map.of("tenant", "acme", "TAGS", "paid"),
                "poison".getBytes(StandardCharsets.UTF_8)));
        try (Receiver receiver = new Receiver(topic, null)) {
            Delivery d = receiver.next();
            InboundMessage original = d.message();
            d.deadLetter(new DeadLetterReason("handler-failed", "boom\u0001\u0002!", 3, "billing"));
            BlockingQueue<Delivery> dead = new LinkedBlockingQueue<>();
            try (Subscription dlq = adapter.subscribe(new SubscriptionRequest("dlq-reader", deadLetters, 10, null),
                    dead::addAll)) {
                Delivery copy = dead.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                assertThat(copy).isNotNull();
                InboundMessage m = copy.message();
                assertThat(text(m)).isEqualTo("poison");
                assertThat(m.key()).isEqualTo("order-7");
                assertThat(m.orderingKey()).isEqualTo("order-7");
                assertThat(m.headers())
                        .containsEntry("message-id", "id-7")
                        .containsEntry("tenant", "acme")
                        .containsEntry("TAGS", "paid")
                        .containsEntry("KEYS", "order-7")
                        .containsEntry(DeadLetterReason.HEADER_CAUSE, "handler-failed")
                        .containsEntry(DeadLetterReason.HEADER_DETAIL, "boom  !")
                        .containsEntry(DeadLetterReason.HEADER_ATTEMPTS, "3")
                        .containsEntry(DeadLetterReason.HEADER_PIPELINE, "billing")
                        .containsEntry(DeadLetterReason.ORIGIN_SOURCE, topic)
                        .containsEntry(DeadLetterReason.ORIGIN_PARTITION, topic + "-idem-broker-0")
                        .containsEntry(DeadLetterReason.ORIGIN_OFFSET, "0")
                        .containsEntry(DeadLetterReason.ORIGIN_MESSAGE_ID, original.brokerMessageId());
                assertThat(m.brokerMessageId()).isNotEqualTo(original.brokerMessageId());
                copy.ack();
            }
            await().atMost(WAIT).until(receiver::committed, offset -> offset == 1);
        }
    }

    @Test
    void aDeadLetterCopyTheBrokerRejectsFailsAndLeavesTheOriginalUnacked() throws Exception {
        adapter.publish(topic, message("poison"));
        Receiver receiver = new Receiver(topic, "no such topic!");
        Delivery d = receiver.next();
        assertThatThrownBy(() -> d.deadLetter(new DeadLetterReason("handler-failed", "boom", 1, "p")))
                .isInstanceOf(BrokerException.class)
                .hasMessageContaining("no such topic!");
        receiver.close();
        assertThat(receiver.committed()).as("a failed dead-letter copy is not done").isLessThanOrEqualTo(0);

        try (Receiver again = new Receiver(topic, null)) {
            assertThat(text(again.next().message())).isEqualTo("poison");
        }
        assertThatThrownBy(() -> adapter.publish("no such topic!", message("x")))
                .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isFalse());
        assertThatThrownBy(() -> adapter.publish(topic, new OutboundMessage(null, null, Map.of("UNIQ_KEY", "x"),
                new byte[1]))).hasMessageContaining("'UNIQ_KEY' is a RocketMQ system property");
    }

    @Test
    void publishSetsTheMessageIdPropertyTheKeysAndTheTagAndFiltersSelectByTagOrSql() throws Exception {
        adapter.publish(topic, new OutboundMessage("id-1", "k1 k2", Map.of("message-id", "ignored", "a", "b",
                "TAGS", "paid", "region", "eu"), "x".getBytes(StandardCharsets.UTF_8)));
        adapter.publish(topic, new OutboundMessage(null, null, Map.of("TAGS", "refunded", "region", "us"),
                new byte[1]));
        adapter.publish(topic, new OutboundMessage("id-3", null, Map.of("region", "eu"), new byte[1]));
        assertThatThrownBy(() -> adapter.publish(topic, new OutboundMessage(null, null, Map.of(), new byte[0])))
                .as("RocketMQ refuses an empty body").isInstanceOfSatisfying(BrokerException.class,
                        e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("the message body length is zero").hasMessageNotContaining("visit the url");
        try (Receiver all = new Receiver(topic, null)) {
            InboundMessage first = all.next().message();
            assertThat(first.headers()).containsEntry("message-id", "id-1").containsEntry("a", "b")
                    .containsEntry("KEYS", "k1 k2").containsEntry("TAGS", "paid").doesNotContainKey("UNIQ_KEY");
            assertThat(first.key()).isEqualTo("k1 k2");
            assertThat(first.orderingKey()).as("the first key").isEqualTo("k1");
            assertThat(first.partition()).isEqualTo(topic + "-idem-broker-0");
            assertThat(first.brokerMessageId()).as("UNIQ_KEY").matches("[0-9A-F]{32,}");
            InboundMessage second = all.next().message();
            assertThat(second.key()).isNull();
            assertThat(second.orderingKey()).isNull();
            assertThat(second.payload()).hasSize(1);
        }
        BlockingQueue<Delivery> tagged = new LinkedBlockingQueue<>();
        BlockingQueue<Delivery> selected = new LinkedBlockingQueue<>();
        try (Subscription byTag = adapter.subscribe(new SubscriptionRequest("tag-" + topic, topic + "?tag=paid||x",
                10, null), tagged::addAll);
                Subscription bySql = adapter.subscribe(new SubscriptionRequest("sql-" + topic,
                        topic + "?sql=region = 'eu'", 10, null), selected::addAll)) {
            // Last in the topic's one queue and passing both filters: once each group has it, each group has had
            // every earlier message its filter lets through.
            adapter.publish(topic, new OutboundMessage("id-4", null, Map.of("TAGS", "paid", "region", "eu"),
                    new byte[1]));
            await().atMost(WAIT).until(() -> arrived(tagged, "id-4") && arrived(selected, "id-4"));
            assertThat(tagged).extracting(d -> d.message().headers().get("message-id")).containsExactly("id-1", "id-4");
            assertThat(selected).extracting(d -> d.message().headers().get("message-id"))
                    .containsExactly("id-1", "id-3", "id-4");
        }
    }

    private static boolean arrived(BlockingQueue<Delivery> deliveries, String messageId) {
        return deliveries.stream().anyMatch(d -> messageId.equals(d.message().headers().get("message-id")));
    }

    @Test
    void messagesOfOneKeyGoToOneQueueSoRocketMqKeepsThemInOrder() throws Exception {
        String four = topic(4);
        for (int i = 0; i < 40; i++) {
            adapter.publish(four, new OutboundMessage(null, "key-" + (i % 2), Map.of("n", Integer.toString(i)),
                    new byte[1]));
        }
        BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        try (Subscription s = adapter.subscribe(new SubscriptionRequest("order-" + four, four, 100, null),
                received::addAll)) {
            await().atMost(WAIT).until(() -> received.size() >= 40);
        }
        for (String key : List.of("key-0", "key-1")) {
            Set<String> queues = new HashSet<>();
            List<Integer> order = new ArrayList<>();
            for (Delivery d : received) {
                if (key.equals(d.message().key())) {
                    queues.add(d.message().partition());
                    order.add(Integer.parseInt(d.message().headers().get("n")));
                }
            }
            assertThat(queues).as("the queues of %s", key).hasSize(1);
            assertThat(order).as("%s in order", key).isSorted().hasSize(20);
        }
    }

    @Test
    void healthCheckPassesAgainstTheBrokerAndBacklogCountsWhatTheReaderGroupHasNotCommitted() throws Exception {
        adapter.checkHealth();
        for (int i = 0; i < 5; i++) {
            adapter.publish(topic, message("m" + i));
        }
        SubscriptionRequest reader = new SubscriptionRequest("reader-" + topic, topic, 10, null);
        assertThat(adapter.backlog(reader)).hasValueSatisfying(b -> {
            assertThat(b.messages()).isEqualTo(5);
            assertThat(b.retained()).isTrue();
        });
        assertThat(adapter.backlog(new SubscriptionRequest("reader", "no-such-topic-" + topic, 10, null)))
                .hasValueSatisfying(b -> assertThat(b.messages()).isZero());
        assertThat(adapter.defaultDeadLetterDestination(topic + "?tag=paid")).isEqualTo(topic + "-DLQ");
    }
}
