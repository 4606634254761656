package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.BrokerException;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression: with bootstrap servers nothing listens on, {@code idem run} logged dozens of client warnings and
 * then "Topic … not present in metadata". Now the first subscribe or publish fails once, within
 * {@code connect-timeout}, naming the servers. No embedded broker: nothing here may reach one.
 */
class KafkaUnreachableTest {

    /** Margin for a loaded machine: the bound is the timeout, the test only checks it is not unbounded. */
    private static final Duration SLACK = Duration.ofSeconds(20);

    private static TestPluginConfig config(List<String> servers) {
        return TestPluginConfig.defaults("broker.kafka", new KafkaAdapterProvider().configSpec())
                .with("bootstrap-servers", servers)
                .with("connect-timeout", "2s");
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void subscribeAndPublishFailOnceNamingEveryBootstrapServerWithinTheConnectTimeout() throws IOException {
        String first = "127.0.0.1:" + closedPort();
        String second = "127.0.0.1:" + closedPort();
        try (KafkaAdapter adapter = KafkaTestSupport.adapter(config(List.of(first, second)))) {
            long started = System.nanoTime();
            assertThatThrownBy(() -> adapter.subscribe(new SubscriptionRequest("orders", "orders", 100, null),
                    batch -> { }))
                    .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                    .hasMessageContaining("Cannot reach Kafka: none of the bootstrap servers [" + first + ", " + second
                            + "] (broker.kafka.bootstrap-servers) accepted a connection within 2s "
                            + "(broker.kafka.connect-timeout)")
                    .hasMessageContaining(first + ": Connection refused")
                    .hasMessageContaining(second + ": Connection refused");
            assertWithinTimeout(started);

            started = System.nanoTime();
            assertThatThrownBy(() -> adapter.publish("orders", new OutboundMessage("id-1", null, Map.of(), new byte[1])))
                    .isInstanceOf(BrokerException.class)
                    .hasMessageContaining("none of the bootstrap servers [" + first + ", " + second + "]");
            assertWithinTimeout(started);
        }
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void aServerThatAcceptsConnectionsButIsNotKafkaFailsWithinTheConnectTimeoutNamingIt() throws IOException {
        // Connections complete in the listen backlog; nothing ever answers them.
        try (ServerSocket silent = new ServerSocket(0, 50);
                KafkaAdapter adapter = KafkaTestSupport.adapter(config(List.of("127.0.0.1:" + silent.getLocalPort())))) {
            long started = System.nanoTime();
            assertThatThrownBy(() -> adapter.publish("orders", new OutboundMessage(null, null, Map.of(), new byte[1])))
                    .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                    .hasMessageContaining("Kafka at [127.0.0.1:" + silent.getLocalPort() + "] "
                            + "(broker.kafka.bootstrap-servers) accepted a connection but did not describe the cluster "
                            + "within 2s (broker.kafka.connect-timeout)")
                    .hasMessageContaining("broker.kafka.security.protocol");
            assertWithinTimeout(started);
        }
    }

    private static void assertWithinTimeout(long startedNanos) {
        Duration took = Duration.ofNanos(System.nanoTime() - startedNanos);
        // It kept trying for the timeout rather than failing at the first refusal (which is instant); the client's
        // own deadlines round to milliseconds, so the bound leaves them a little room.
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(1500)).isLessThan(Duration.ofSeconds(2).plus(SLACK));
    }

    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
