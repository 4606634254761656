package dev.idem.adapter.rabbitmq;

import static dev.idem.adapter.rabbitmq.Collector.message;
import static dev.idem.adapter.rabbitmq.Collector.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.GetResponse;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** How the adapter settles deliveries with RabbitMQ: acks, requeues and dead letters. */
class RabbitMqSettlementTest {

    private final List<BrokerAdapter> adapters = new ArrayList<>();
    private String queue;

    @BeforeAll
    static void locateBroker() {
        RabbitMqTestBroker.url();
    }

    @BeforeEach
    void createQueue() {
        queue = RabbitMqTestBroker.uniqueQueue("idem-settle");
    }

    @AfterEach
    void cleanUp() {
        adapters.forEach(BrokerAdapter::close);
        RabbitMqTestBroker.delete(queue);
        RabbitMqTestBroker.delete(queue + ".DLQ");
    }

    private BrokerAdapter adapter() {
        BrokerAdapter adapter = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config());
        adapters.add(adapter);
        return adapter;
    }

    @Test
    void outOfOrderAcksFromManyThreadsAckOnlyTheirOwnDeliveries() throws Exception {
        BrokerAdapter adapter = adapter();
        int count = 200;
        List<Delivery> held = new ArrayList<>();
        try (Collector first = new Collector(adapter, queue, count, null)) {
            for (int i = 0; i < count; i++) {
                adapter.publish(queue, message("m" + i));
            }
            for (int i = 0; i < count; i++) {
                held.add(first.next());
            }
            // Ack all but every 7th, shuffled, from 8 threads: acks that pile up are coalesced into multiple
            // acks, which must never take an unacked one along.
            List<Delivery> acked = new ArrayList<>();
            for (Delivery d : held) {
                if (!kept(text(d))) {
                    acked.add(d);
                }
            }
            Collections.shuffle(acked, new Random(42));
            ExecutorService pool = Executors.newFixedThreadPool(8);
            acked.forEach(d -> pool.execute(d::ack));
            pool.shutdown();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }

        Set<String> again = new HashSet<>();
        try (Collector second = new Collector(adapter, queue)) {
            for (int i = 0; i < count / 7 + 1; i++) {
                Delivery d = second.next();
                assertThat(d.message().redelivered()).isTrue();
                again.add(text(d));
                d.ack();
            }
            second.expectOnlySentinel(adapter, queue);
        }
        assertThat(again).hasSize(count / 7 + 1).allMatch(RabbitMqSettlementTest::kept);
    }

    private static boolean kept(String body) {
        return Integer.parseInt(body.substring(1)) % 7 == 3;
    }

    @Test
    void retryLaterRequeuesAtOnceWithTheRedeliveredFlag() throws Exception {
        BrokerAdapter adapter = adapter();
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, new OutboundMessage("id-7", "order-7", Map.of("tenant", "acme"),
                    "again".getBytes(StandardCharsets.UTF_8)));
            Delivery first = c.next();
            assertThat(first.message().redelivered()).isFalse();
            first.retryLater(Duration.ZERO);
            Delivery second = c.next();
            InboundMessage m = second.message();
            assertThat(text(second)).isEqualTo("again");
            assertThat(m.redelivered()).isTrue();
            assertThat(m.brokerMessageId()).isEqualTo("id-7");
            assertThat(m.key()).isEqualTo("order-7");
            assertThat(m.headers()).containsEntry("tenant", "acme").containsEntry("message-id", "id-7");
            assertThat(m.deliveryCount()).as("a classic queue keeps no count").isZero();
            second.ack();
            c.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void retryLaterWithDelayHoldsTheDeliveryThenRequeuesIt() throws Exception {
        BrokerAdapter adapter = adapter();
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, message("later"));
            Delivery first = c.next();
            long start = System.nanoTime();
            first.retryLater(Duration.ofMillis(300));
            Delivery second = c.next();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("not requeued before the delay")
                    .isGreaterThanOrEqualTo(Duration.ofMillis(300));
            assertThat(text(second)).isEqualTo("later");
            assertThat(second.message().redelivered()).isTrue();
            second.ack();
            c.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void deadLetterPublishesAConfirmedCopyWithReasonAndOriginThenAcksTheOriginal() throws Exception {
        BrokerAdapter adapter = adapter();
        RabbitMqTestBroker.declare(queue);
        RabbitMqTestBroker.publishRaw(queue, "amqp-id-1", Map.of("tenant", "acme"), "poison");
        try (Collector c = new Collector(adapter, queue)) {
            Delivery d = c.next();
            assertThat(d.message().brokerMessageId()).isEqualTo("amqp-id-1");
            assertThat(d.message().headers()).as("the message-id property shows as header")
                    .containsEntry("message-id", "amqp-id-1");
            d.deadLetter(new DeadLetterReason("handler-failed", "boom", 3, "orders"));

            GetResponse dead = RabbitMqTestBroker.get(queue + ".DLQ");
            assertThat(dead).as("the copy is in <queue>.DLQ once deadLetter returned").isNotNull();
            assertThat(new String(dead.getBody(), StandardCharsets.UTF_8)).isEqualTo("poison");
            assertThat(dead.getProps().getMessageId()).isEqualTo("amqp-id-1");
            assertThat(dead.getProps().getDeliveryMode()).isEqualTo(2);
            Map<String, String> headers = new HashMap<>();
            dead.getProps().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
            assertThat(headers).containsEntry("tenant", "acme")
                    .containsEntry(DeadLetterReason.HEADER_CAUSE, "handler-failed")
                    .containsEntry(DeadLetterReason.HEADER_DETAIL, "boom")
                    .containsEntry(DeadLetterReason.HEADER_ATTEMPTS, "3")
                    .containsEntry(DeadLetterReason.HEADER_PIPELINE, "orders")
                    .containsEntry(DeadLetterReason.ORIGIN_SOURCE, queue)
                    .containsEntry(DeadLetterReason.ORIGIN_MESSAGE_ID, "amqp-id-1");
            c.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void deadLetterToAMissingQueueFailsAndLeavesTheOriginalUnacked() throws Exception {
        BrokerAdapter adapter = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config().with("declare", false));
        adapters.add(adapter);
        RabbitMqTestBroker.declare(queue);
        String missing = queue + "-nowhere";
        adapter.publish(queue, message("poison"));
        try (Collector c = new Collector(adapter, queue, 10, missing)) {
            Delivery d = c.next();
            assertThatThrownBy(() -> d.deadLetter(new DeadLetterReason("handler-failed", "boom", 1, "orders")))
                    .isInstanceOf(BrokerException.class)
                    .hasMessageContaining("'" + missing + "'")
                    .hasMessageContaining("no queue of that name");
            d.retryLater(Duration.ZERO);
            Delivery again = c.next();
            assertThat(text(again)).as("the original was not acked").isEqualTo("poison");
            again.ack();
            c.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void publishToAMissingQueueIsAnError() {
        BrokerAdapter adapter = adapter();
        String missing = RabbitMqTestBroker.uniqueQueue("idem-missing");
        assertThatThrownBy(() -> adapter.publish(missing, message("lost?")))
                .isInstanceOf(BrokerException.class)
                .hasMessageContaining("no queue of that name");
    }

    @Test
    void stopEndsDeliveriesButSettlesStillWorkUntilClose() throws Exception {
        BrokerAdapter adapter = adapter();
        Delivery held;
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, message("before stop"));
            held = c.next();
            c.subscription.stop();
            adapter.publish(queue, message("after stop"));
            held.ack();
        }
        assertThat(RabbitMqTestBroker.get(queue)).extracting(r -> new String(r.getBody(), StandardCharsets.UTF_8))
                .as("the message published after stop waited in the queue; the acked one is gone")
                .isEqualTo("after stop");
        assertThat(RabbitMqTestBroker.ready(queue)).isZero();
    }

    @Test
    void closeReturnsUnsettledDeliveriesAndIgnoresTheirLateSettles() throws Exception {
        BrokerAdapter adapter = adapter();
        Delivery held;
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, message("held"));
            held = c.next();
        }
        held.ack();
        try (Collector c = new Collector(adapter, queue)) {
            Delivery again = c.next();
            assertThat(text(again)).isEqualTo("held");
            assertThat(again.message().redelivered()).isTrue();
            again.ack();
            c.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void aDeliveryCannotBeSettledTwice() throws Exception {
        BrokerAdapter adapter = adapter();
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, message("once"));
            Delivery d = c.next();
            d.ack();
            assertThatThrownBy(d::ack).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("already settled");
            c.expectOnlySentinel(adapter, queue);
        }
    }
}
