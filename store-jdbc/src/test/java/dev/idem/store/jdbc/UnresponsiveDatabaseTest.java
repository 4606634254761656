package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A database endpoint that accepts TCP connections and never answers (a stuck server, a firewall that
 * swallows packets after the handshake) must fail the store's creation within the connection timeout,
 * naming the endpoint, instead of hanging {@code idem store} or {@code idem run}.
 */
class UnresponsiveDatabaseTest {

    private static final JdbcDedupStoreProvider PROVIDER = new JdbcDedupStoreProvider();

    private ServerSocket silent;
    private final List<Socket> accepted = new CopyOnWriteArrayList<>();

    @BeforeEach
    void listenWithoutAnswering() throws IOException {
        silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(() -> {
            try {
                while (true) {
                    accepted.add(silent.accept());
                }
            } catch (IOException closed) {
                // The test is over.
            }
        }, "silent-database");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    @AfterEach
    void close() throws IOException {
        silent.close();
        for (Socket socket : accepted) {
            socket.close();
        }
    }

    @Test
    void postgresqlThatNeverAnswersFailsWithinTheConnectionTimeoutNamingTheEndpoint() {
        assertFailsInTime("jdbc:postgresql://127.0.0.1:" + silent.getLocalPort() + "/test");
    }

    @Test
    void mariadbThatNeverAnswersFailsWithinTheConnectionTimeoutNamingTheEndpoint() {
        assertFailsInTime("jdbc:mariadb://127.0.0.1:" + silent.getLocalPort() + "/test");
    }

    private void assertFailsInTime(String url) {
        TestPluginConfig config = TestPluginConfig.defaults("store.jdbc", PROVIDER.configSpec())
                .with("url", url)
                .with("pool.connection-timeout", "1s");
        long started = System.nanoTime();

        StoreException failure = catchThrowableOfType(() -> PROVIDER.create(config, StoreContext.system()),
                StoreException.class);

        Duration took = Duration.ofNanos(System.nanoTime() - started);
        // The bound is the connection timeout (1s) for connecting and logging in; the slack is for a busy machine.
        assertThat(took).isLessThan(Duration.ofSeconds(15));
        assertThat(accepted).as("the driver reached the silent endpoint").isNotEmpty();
        assertThat(failure).isNotNull();
        assertThat(failure.getMessage()).contains("127.0.0.1:" + silent.getLocalPort()).contains("connecting failed");
        assertThat(failure.retriable()).isTrue();
    }

    @Test
    void timeoutsTheUserSetAreKept() {
        Map<String, String> properties = JdbcDedupStoreProvider.driverTimeouts(
                "jdbc:postgresql://db/test", Duration.ofSeconds(5), Duration.ofSeconds(60),
                Map.of("socketTimeout", "300"));
        assertThat(properties).containsExactlyInAnyOrderEntriesOf(Map.of("connectTimeout", "5", "loginTimeout", "5"));
        assertThat(JdbcDedupStoreProvider.driverTimeouts("jdbc:mariadb://db/test?connectTimeout=2000",
                Duration.ofMillis(1500), Duration.ofSeconds(60), Map.of()))
                .containsExactlyInAnyOrderEntriesOf(Map.of("socketTimeout", "60000"));
        assertThat(JdbcDedupStoreProvider.driverTimeouts("jdbc:h2:file:./data/idem", Duration.ofSeconds(5),
                Duration.ofSeconds(60), Map.of())).isEmpty();
    }
}
