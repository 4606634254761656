package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Plugin code runs in its plugin's class loader whichever thread calls it, and the loaders outlive every
 * plugin thread and exception: {@code idem run} answers {@code /health/ready} for each broker and each store
 * (Kafka's health check builds an admin client on the HTTP thread, whose configuration loads classes by name),
 * and errors raised by plugin code print whole. Also: the shipped H2 store's server listens on 127.0.0.1 only,
 * its key is its user's alone, and {@code idem store} reads the file while {@code idem run} holds it.
 * One installation serves every test.
 */
class PluginContextIT {

    private static final Duration COMMAND_TIMEOUT = Duration.ofMinutes(1);
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
    private static final String[] CLASS_LOADING_FAILURES = {"NoClassDefFoundError", "ExceptionInInitializerError",
        "ClassNotFoundException", "Exception in thread"};
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @TempDir
    static Path dir;

    private static Installation idem;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @BeforeAll
    static void install() {
        idem = Installation.in(dir);
    }

    // ------------------------------------------------------------------ readiness, each broker and each store

    @Test
    void kafkaWithCaffeineIsReady() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "ready-" + run;
        kafka.createTopic(topic, 1);
        try {
            assertReady("kafka", """
                    broker:
                      type: kafka
                      kafka: { bootstrap-servers: "%s" }
                    store: { type: caffeine }
                    """.formatted(kafka.bootstrapServers()), topic);
        } finally {
            kafka.deleteTopic(topic);
        }
    }

    @Test
    void rabbitMqWithRedisIsReady() throws Exception {
        String uri = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F",
                "Start it with: rabbitmq-server -detached", null);
        String redis = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        String queue = "idem-ready-" + run;
        try {
            assertReady("rabbitmq", """
                    broker:
                      type: rabbitmq
                      rabbitmq: { uri: "%s", declare: true }
                    store:
                      type: redis
                      redis: { uri: "%s", key-prefix: "idem-ready-%s:" }
                    """.formatted(uri, redis, run), queue);
        } finally {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(uri);
            try (com.rabbitmq.client.Connection c = factory.newConnection();
                    Channel channel = c.createChannel()) {
                channel.queueDelete(queue);
                channel.queueDelete(queue + ".DLQ");
            }
        }
    }

    @Test
    void activeMqWithPostgresIsReady() throws Exception {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test",
                "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_ready_" + run;
        sql(url + "?user=postgres", "CREATE SCHEMA " + schema);
        try {
            assertReady("activemq", """
                    broker:
                      type: activemq
                      activemq:
                        embedded: { enabled: true, data-directory: "${IDEM_HOME}/data/activemq-%s" }
                    store:
                      type: jdbc
                      jdbc: { url: "%s?currentSchema=%s", username: postgres }
                    """.formatted(run, url, schema), "orders");
        } finally {
            sql(url + "?user=postgres", "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    /**
     * Runs {@code idem run} on {@code brokerAndStore}, polls {@code /health/ready} until 200, asks again (the
     * defect killed the first probe and broke the client library for the life of the JVM), then stops it.
     */
    private void assertReady(String name, String brokerAndStore, String source) throws Exception {
        int port = Installation.freePort();
        Path config = writeConfig(name, brokerAndStore + """
                pipelines:
                  orders:
                    source: %s
                    handler: dev.idem.examples.orders.OrderPaymentHandler
                runtime:
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(source, port));
        Installation.Running running = idem.start("run", "--config", config.toString());
        try {
            HttpResponse<String> ready = awaitReady(running, port);
            assertThat(ready.body()).contains("broker: up").contains("store: up").contains("pipeline.orders: running");
            for (int probe = 0; probe < 3; probe++) {
                HttpResponse<String> again = get(port, "/health/ready");
                assertThat(again.statusCode()).as("probe %d after the first ready one: %s", probe, again.body())
                        .isEqualTo(200);
            }
        } finally {
            int exit = running.terminate(Duration.ofSeconds(60));
            assertThat(exit).as("SIGTERM ends a graceful stop\n" + running.log()).isEqualTo(143);
        }
        assertThat(running.log()).as("the log of idem run on %s", name).doesNotContain(CLASS_LOADING_FAILURES);
    }

    private static HttpResponse<String> awaitReady(Installation.Running running, int port) {
        try {
            return await().atMost(READY_TIMEOUT).pollInterval(Duration.ofMillis(250)).ignoreExceptions()
                    .failFast("bin/idem exited", () -> !running.process.isAlive())
                    .until(() -> get(port, "/health/ready"), response -> response.statusCode() == 200);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError("/health/ready did not answer 200: " + e.getMessage() + "\n" + running.log(), e);
        }
    }

    private static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    // ------------------------------------------------------------------ errors raised by plugin code

    @Test
    void aStoreFailureWhoseMessageIsBuiltWhenPrintedPrintsWhole() {
        // 'order' is a reserved word: creating the table fails in Jdbi, whose exception builds its message lazily.
        Path config = writeConfig("table-order", """
                broker:
                  type: activemq
                  activemq: { url: "vm://nowhere?create=false" }
                store:
                  type: jdbc
                  jdbc: { url: "jdbc:h2:file:${IDEM_HOME}/data/order-%s", table: order }
                pipelines:
                  orders: { source: orders, handler: dev.idem.examples.orders.OrderPaymentHandler }
                """.formatted(run));

        Installation.Result stats = idem.run(COMMAND_TIMEOUT, "store", "stats", "--config", config.toString());

        assertThat(stats.exitCode()).as(stats.toString()).isEqualTo(1);
        assertThat(stats.err()).as(stats.toString()).contains("creating the table (schema: create) failed")
                .contains("caused by: org.jdbi.v3.core.statement.")
                .doesNotContain(CLASS_LOADING_FAILURES);
    }

    @Test
    void aRabbitMqListenerThatNeverAnswersEndsPublishWithoutAFailingClientThread() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<Socket> accepted = Collections.synchronizedList(new ArrayList<>());
            Thread acceptor = new Thread(() -> {
                while (!silent.isClosed()) {
                    try {
                        accepted.add(silent.accept());
                    } catch (IOException closed) {
                        return;
                    }
                }
            }, "silent-listener");
            acceptor.setDaemon(true);
            acceptor.start();
            Path config = writeConfig("rabbitmq-silent", """
                    broker:
                      type: rabbitmq
                      rabbitmq:
                        uri: "amqp://guest:guest@127.0.0.1:%d/%%2F"
                        client: { connection-timeout: 1s, handshake-timeout: 1s }
                    store: { type: caffeine }
                    pipelines:
                      orders: { source: orders, handler: dev.idem.examples.orders.OrderPaymentHandler }
                    """.formatted(silent.getLocalPort()));

            Installation.Result publish = idem.run(COMMAND_TIMEOUT, "publish", "--config", config.toString());

            assertThat(publish.exitCode()).as(publish.toString()).isEqualTo(1);
            assertThat(publish.err()).as(publish.toString())
                    .contains("Cannot connect to RabbitMQ at amqp://127.0.0.1:" + silent.getLocalPort())
                    .doesNotContain(CLASS_LOADING_FAILURES);
            assertThat(publish.out()).as(publish.toString()).doesNotContain(CLASS_LOADING_FAILURES);
            synchronized (accepted) {
                for (Socket socket : accepted) {
                    socket.close();
                }
            }
        }
    }

    // ------------------------------------------------------------------ the shipped H2 store

    @Test
    void theShippedH2StoreListensOnLoopbackOnlyKeepsItsKeyPrivateAndIsReadableWhileRunning() throws Exception {
        int port = Installation.freePort();
        String shipped = Files.readString(idem.home.resolve("conf/idem.yaml"));
        assertThat(shipped).as("the shipped store").contains("jdbc:h2:file:${IDEM_HOME}/data/idem-store;AUTO_SERVER=TRUE");
        Path config = writeConfig("shipped", shipped.replace("runtime:\n", "runtime:\n  http.port: " + port + "\n"));
        Installation.Running running = idem.start("run", "--config", config.toString());
        try {
            awaitReady(running, port);
            Path lock = idem.home.resolve("data/idem-store.lock.db");
            Properties lockFile = new Properties();
            try (InputStream in = Files.newInputStream(lock)) {
                lockFile.load(in);
            }
            String server = lockFile.getProperty("server");
            assertThat(server).as("where H2 says its server is, in " + lock).matches("(localhost|127\\.0\\.0\\.1):\\d+");
            int h2Port = Integer.parseInt(server.substring(server.indexOf(':') + 1));

            assertThat(connects(InetAddress.getLoopbackAddress(), h2Port)).as("the server on loopback").isTrue();
            for (InetAddress address : nonLoopbackAddresses()) {
                assertThat(connects(address, h2Port)).as("H2's server reachable on %s", address).isFalse();
            }
            assertThat(Files.getPosixFilePermissions(lock)).as("the lock file holding the server's key")
                    .containsOnly(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

            Installation.Result stats = idem.run(COMMAND_TIMEOUT, "store", "stats", "--config", config.toString());
            assertThat(stats.exitCode()).as(stats.toString()).isZero();
            assertThat(stats.out()).as(stats.toString()).contains("store 'jdbc': 0 claimed, 0 completed");
            assertThat(stats.err()).as(stats.toString()).doesNotContain(CLASS_LOADING_FAILURES);
        } finally {
            int exit = running.terminate(Duration.ofSeconds(60));
            assertThat(exit).as(running.log()).isEqualTo(143);
        }
    }

    private static boolean connects(InetAddress address, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(address, port), 2000);
            return true;
        } catch (ConnectException | SocketTimeoutException refused) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** This machine's addresses other than loopback (and link-local IPv6, which needs a scope to connect). */
    private static List<InetAddress> nonLoopbackAddresses() throws SocketException {
        List<InetAddress> addresses = new ArrayList<>();
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (nic.isUp() && !nic.isLoopback()) {
                Collections.list(nic.getInetAddresses()).stream()
                        .filter(a -> !a.isLoopbackAddress() && !a.isLinkLocalAddress())
                        .forEach(addresses::add);
            }
        }
        return addresses;
    }

    // ------------------------------------------------------------------ helpers

    private Path writeConfig(String name, String yaml) {
        Path file = idem.home.resolve("conf/" + name + "-" + run + ".yaml");
        try {
            Files.writeString(file, yaml, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    private static void sql(String url, String statement) {
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            s.execute(statement);
        } catch (SQLException e) {
            throw new AssertionError(statement + " failed: " + e, e);
        }
    }
}
