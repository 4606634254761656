package dev.idem.adapter.rabbitmq;

import static dev.idem.adapter.rabbitmq.Collector.message;
import static dev.idem.adapter.rabbitmq.Collector.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.Delivery;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the adapter declares: a quorum queue and its delivery count, a declaration that clashes with an existing
 * queue, and a binding to an exchange.
 */
class RabbitMqDeclareTest {

    private String queue;
    private BrokerAdapter adapter;

    @BeforeAll
    static void locateBroker() {
        RabbitMqTestBroker.url();
    }

    @BeforeEach
    void create() {
        queue = RabbitMqTestBroker.uniqueQueue("idem-quorum");
        adapter = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config().with("queue-type", "quorum"));
    }

    @AfterEach
    void cleanUp() {
        adapter.close();
        RabbitMqTestBroker.delete(queue);
        RabbitMqTestBroker.delete(queue + ".DLQ");
    }

    @Test
    void deliveryCountComesFromXDeliveryCountAndCountsFromOneOnRedeliveries() throws Exception {
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, message("counted"));
            Delivery first = c.next();
            assertThat(first.message().redelivered()).isFalse();
            assertThat(first.message().deliveryCount()).as("no x-delivery-count on a first delivery: unknown")
                    .isZero();
            first.retryLater(Duration.ZERO);

            Delivery second = c.next();
            assertThat(second.message().redelivered()).isTrue();
            assertThat(second.message().headers()).containsEntry("x-delivery-count", "1");
            assertThat(second.message().deliveryCount()).isEqualTo(2);
            second.retryLater(Duration.ZERO);

            Delivery third = c.next();
            assertThat(text(third)).isEqualTo("counted");
            assertThat(third.message().deliveryCount()).isEqualTo(3);
            third.ack();
            c.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void subscribingToAClassicQueueAsQuorumFailsNamingTheClash() {
        RabbitMqTestBroker.declare(queue);
        assertThatThrownBy(() -> new Collector(adapter, queue))
                .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("Cannot consume queue '" + queue + "'")
                .hasMessageContaining("PRECONDITION_FAILED");
    }

    @Test
    void subscribingToAMissingQueueWithoutDeclaringFailsWithAHint() {
        BrokerAdapter undeclared = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config().with("declare", false));
        try {
            assertThatThrownBy(() -> new Collector(undeclared, queue))
                    .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                    .hasMessageContaining("Cannot consume queue '" + queue + "': NOT_FOUND")
                    .hasMessageEndingWith("Declare the queue, or set declare: true");
        } finally {
            undeclared.close();
        }
    }

    @Test
    void bindsTheQueueToTheConfiguredExchangeAndReportsTheRoutingKeyAsKey() throws Exception {
        String exchange = RabbitMqTestBroker.uniqueQueue("idem-exchange");
        BrokerAdapter bound = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config()
                .with("exchange", exchange).with("binding-key", "orders.*"));
        try (Collector c = new Collector(bound, queue)) {
            RabbitMqTestBroker.onChannel(ch -> {
                ch.basicPublish(exchange, "payments.created", null, "not for us".getBytes(StandardCharsets.UTF_8));
                ch.basicPublish(exchange, "orders.created", null, "for us".getBytes(StandardCharsets.UTF_8));
                return null;
            });
            Delivery d = c.next();
            assertThat(text(d)).isEqualTo("for us");
            assertThat(d.message().key()).isEqualTo("orders.created");
            assertThat(d.message().brokerMessageId()).as("no message-id property").isNull();
            d.ack();
            c.expectOnlySentinel(bound, queue);
        } finally {
            bound.close();
            RabbitMqTestBroker.onChannel(ch -> ch.exchangeDelete(exchange));
        }
    }
}
