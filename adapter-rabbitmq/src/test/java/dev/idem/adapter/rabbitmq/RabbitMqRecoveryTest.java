package dev.idem.adapter.rabbitmq;

import static dev.idem.adapter.rabbitmq.Collector.message;
import static dev.idem.adapter.rabbitmq.Collector.text;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import dev.idem.testkit.TestPluginConfig;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The consuming connection is closed by the server (rabbitmqctl close_connection): the adapter consumes again on
 * a new connection, and a settle of a delivery from the dead channel acks nothing on the new one.
 */
class RabbitMqRecoveryTest {

    private String queue;
    private String connectionName;
    private BrokerAdapter adapter;

    @BeforeAll
    static void locateBroker() {
        RabbitMqTestBroker.url();
    }

    @BeforeEach
    void create() {
        queue = RabbitMqTestBroker.uniqueQueue("idem-recovery");
        TestPluginConfig config = RabbitMqTestBroker.config().with("consumers", 2);
        connectionName = config.get(RabbitMqAdapterProvider.CONNECTION_NAME);
        adapter = RabbitMqTestBroker.adapter(config);
    }

    @AfterEach
    void cleanUp() {
        adapter.close();
        RabbitMqTestBroker.delete(queue);
        RabbitMqTestBroker.delete(queue + ".DLQ");
    }

    @Test
    void consumesAgainAfterTheServerClosedTheConnectionAndIgnoresStaleSettles() throws Exception {
        try (Collector c = new Collector(adapter, queue)) {
            adapter.publish(queue, message("before"));
            Delivery stale = c.next();

            assertThat(RabbitMqTestBroker.closeConnectionsNamed(connectionName + "-consume")).isEqualTo(1);
            // Tag 1 on the new channel will be some other delivery: acking the stale one must not ack it.
            adapter.publish(queue, message("after-1"));
            adapter.publish(queue, message("after-2"));
            Set<String> bodies = new HashSet<>();
            Delivery again = null;
            for (int i = 0; i < 3; i++) {
                Delivery d = c.next();
                bodies.add(text(d));
                if (text(d).equals("before")) {
                    again = d;
                    stale.ack();
                } else {
                    d.ack();
                }
            }
            assertThat(bodies).containsExactlyInAnyOrder("before", "after-1", "after-2");
            assertThat(again.message().redelivered()).isTrue();
            again.retryLater(Duration.ZERO);

            Delivery last = c.next();
            assertThat(text(last)).as("the stale ack acked nothing: 'before' is still there").isEqualTo("before");
            last.ack();
            c.expectOnlySentinel(adapter, queue);
        }
        adapter.checkHealth();
    }
}
