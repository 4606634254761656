package dev.idem.adapter.rocketmq;

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
 * With name servers nothing listens on, a RocketMQ consumer starts and then never receives anything, and a producer
 * fails each send after its timeout with "No route info". The adapter's first subscribe or publish fails once, within
 * {@code connect-timeout}, naming the name servers. No embedded broker: nothing here may reach one.
 */
class RocketMqUnreachableTest {

    /** broker.rocketmq.connect-timeout: short, so that each of the three waits below costs a second. */
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    /** Margin for a loaded machine: the bound is the timeout, the test only checks it is not unbounded. */
    private static final Duration SLACK = Duration.ofSeconds(20);

    private static TestPluginConfig config(List<String> servers) {
        return TestPluginConfig.defaults("broker.rocketmq", new RocketMqAdapterProvider().configSpec())
                .with("name-server", servers)
                .with("connect-timeout", "1s");
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void subscribeAndPublishFailOnceNamingEveryNameServerWithinTheConnectTimeout() throws IOException {
        String first = "127.0.0.1:" + closedPort();
        String second = "127.0.0.1:" + closedPort();
        try (RocketMqAdapter adapter = RocketMqTestSupport.adapter(config(List.of(first, second)))) {
            long started = System.nanoTime();
            assertThatThrownBy(() -> adapter.subscribe(new SubscriptionRequest("orders", "orders", 100, null),
                    batch -> { }))
                    .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                    .hasMessageContaining("Cannot reach RocketMQ: none of the name servers [" + first + ", " + second
                            + "] (broker.rocketmq.name-server) accepted a connection within 1s "
                            + "(broker.rocketmq.connect-timeout)")
                    .hasMessageContaining(first + ": Connection refused")
                    .hasMessageContaining(second + ": Connection refused");
            assertWithinTimeout(started);

            started = System.nanoTime();
            assertThatThrownBy(() -> adapter.publish("orders", new OutboundMessage("id-1", null, Map.of(), new byte[1])))
                    .isInstanceOf(BrokerException.class)
                    .hasMessageContaining("none of the name servers [" + first + ", " + second + "]");
            assertWithinTimeout(started);
        }
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void aServerThatAcceptsConnectionsButIsNotANameServerFailsWithinTheConnectTimeoutNamingIt() throws IOException {
        // Connections complete in the listen backlog; nothing ever answers them.
        try (ServerSocket silent = new ServerSocket(0, 50);
                RocketMqAdapter adapter = RocketMqTestSupport.adapter(config(List.of("127.0.0.1:" + silent.getLocalPort())))) {
            long started = System.nanoTime();
            assertThatThrownBy(() -> adapter.publish("orders", new OutboundMessage(null, null, Map.of(), new byte[1])))
                    .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                    .hasMessageContaining("RocketMQ name server [127.0.0.1:" + silent.getLocalPort() + "] "
                            + "(broker.rocketmq.name-server) accepted a connection but did not describe the cluster "
                            + "within 1s (broker.rocketmq.connect-timeout)")
                    .hasMessageContaining("broker.rocketmq.tls");
            assertWithinTimeout(started);
        }
    }

    private static void assertWithinTimeout(long startedNanos) {
        Duration took = Duration.ofNanos(System.nanoTime() - startedNanos);
        // It kept trying for the timeout rather than failing at the first refusal (which is instant); the client's
        // own deadlines round to milliseconds, so the bound leaves them a little room.
        assertThat(took).isGreaterThanOrEqualTo(TIMEOUT.multipliedBy(3).dividedBy(4)).isLessThan(TIMEOUT.plus(SLACK));
    }

    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
