package dev.idem.adapter.activemq;

import static dev.idem.adapter.activemq.Inbox.message;
import static dev.idem.adapter.activemq.Inbox.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.Delivery;
import dev.idem.testkit.TestPluginConfig;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The embedded broker, configured through the provider as the distribution's default configuration does. */
class EmbeddedBrokerTest {

    private static TestPluginConfig embedded(Path dir, String name) {
        return TestBroker.defaults()
                .with("embedded.enabled", true)
                .with("embedded.data-directory", dir.toString())
                .with("embedded.broker-name", name)
                .with("redelivery.initial-delay", "0");
    }

    @Test
    void unackedMessagesSurviveARestartOnTheSameDataDirectory(@TempDir Path dir) throws Exception {
        BrokerAdapter first = TestBroker.adapter(embedded(dir, "embedded-restart"));
        try {
            for (int i = 0; i < 3; i++) {
                first.publish("orders", message("m" + i, Map.of()));
            }
            try (Inbox inbox = new Inbox(first, "orders", "orders", null)) {
                Delivery d = inbox.next();
                assertThat(text(d)).isEqualTo("m0");
                d.ack();
                inbox.next(); // m1, received and never settled
            }
        } finally {
            first.close(); // stops the broker
        }

        BrokerAdapter second = TestBroker.adapter(embedded(dir, "embedded-restart"));
        try (Inbox inbox = new Inbox(second, "orders", "orders", null)) {
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                Delivery d = inbox.next();
                bodies.add(text(d));
                d.ack();
            }
            assertThat(bodies).containsExactlyInAnyOrder("m1", "m2");
            inbox.expectOnlySentinel(second, "orders");
        } finally {
            second.close();
        }
    }

    @Test
    void aSecondBrokerOnTheSameDataDirectoryFailsNamingTheDirectory(@TempDir Path dir) {
        BrokerAdapter owner = TestBroker.adapter(embedded(dir, "embedded-owner"));
        try {
            assertThatThrownBy(() -> TestBroker.adapter(embedded(dir, "embedded-intruder")))
                    .isInstanceOf(BrokerException.class)
                    .hasMessageContaining(dir.toAbsolutePath().toString())
                    .hasMessageContaining("broker.activemq.embedded.data-directory")
                    .hasMessageContaining("locked");
            owner.checkHealth();
        } finally {
            owner.close();
        }
    }

    @Test
    void listensForOtherProcessesWhenAsked(@TempDir Path dir) throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        BrokerAdapter embedded = TestBroker.adapter(embedded(dir, "embedded-listen")
                .with("embedded.listen", "tcp://127.0.0.1:" + port));
        try {
            BrokerAdapter remote = TestBroker.adapter(TestBroker.defaults().with("url", "tcp://127.0.0.1:" + port));
            try (Inbox inbox = new Inbox(embedded, "remote", "from-remote", null)) {
                remote.publish("from-remote", message("hello", Map.of()));
                Delivery d = inbox.next();
                assertThat(text(d)).isEqualTo("hello");
                d.ack();
            } finally {
                remote.close();
            }
        } finally {
            embedded.close();
        }
    }
}
