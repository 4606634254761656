package dev.idem.adapter.activemq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.Delivery;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression: {@code idem publish} to a {@code failover:} URL whose broker is down retried forever. The first
 * connect and a send while the connection is lost now end within {@code connect-timeout} with an error naming
 * the URL, and a connected adapter still reconnects without limit.
 */
class ConnectTimeoutTest {

    /** Margin for a loaded machine: the bound is the timeout, the test only checks it is not unbounded. */
    private static final Duration SLACK = Duration.ofSeconds(20);

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void connectingThroughFailoverToABrokerThatIsDownFailsWithinTheConnectTimeoutNamingTheUrl() throws IOException {
        String url = "failover:(tcp://127.0.0.1:" + closedPort() + ")?initialReconnectDelay=50";
        long started = System.nanoTime();
        assertThatThrownBy(() -> TestBroker.adapter(TestBroker.defaults().with("url", url)
                .with("connect-timeout", "2s")))
                .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                .hasMessageContaining("Cannot connect to ActiveMQ at " + url)
                .hasMessageContaining("no connection within 2s (broker.activemq.connect-timeout)");
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        // It kept trying for the timeout rather than failing at the first refusal (which is instant); the client's
        // own deadlines round to milliseconds, so the bound leaves them a little room.
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(1500)).isLessThan(Duration.ofSeconds(2).plus(SLACK));
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void whileTheBrokerIsDownAPublishFailsWithinTheTimeoutAndTheAdapterReconnectsWhenItIsBack(@TempDir Path dir)
            throws Exception {
        try (TestBroker broker = new TestBroker(dir)) {
            broker.start();
            String url = "failover:(" + broker.tcpUrl() + ")?initialReconnectDelay=50&maxReconnectDelay=500";
            BrokerAdapter adapter = TestBroker.adapter(TestBroker.defaults().with("url", url)
                    .with("connect-timeout", "2s").with("redelivery.initial-delay", "0"));
            try (Inbox inbox = new Inbox(adapter, "orders", "orders", null)) {
                adapter.publish("orders", Inbox.message("before", Map.of()));
                Delivery before = inbox.next();
                assertThat(Inbox.text(before)).isEqualTo("before");
                before.ack();

                broker.stop();
                long started = System.nanoTime();
                assertThatThrownBy(() -> adapter.publish("orders", Inbox.message("while down", Map.of())))
                        .isInstanceOf(BrokerException.class)
                        .hasMessageContaining("on ActiveMQ at " + url)
                        .hasMessageContaining("at most 2s, broker.activemq.connect-timeout");
                assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(2).plus(SLACK));

                broker.start();
                await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(adapter::checkHealth);
                adapter.publish("orders", Inbox.message("after", Map.of()));
                Delivery after = inbox.next();
                // The ack of "before" may have been in flight when the broker stopped: it is then redelivered.
                while (Inbox.text(after).equals("before")) {
                    after.ack();
                    after = inbox.next();
                }
                assertThat(Inbox.text(after)).as("the running consumer reconnected").isEqualTo("after");
                after.ack();
            } finally {
                adapter.close();
            }
        }
    }

    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
