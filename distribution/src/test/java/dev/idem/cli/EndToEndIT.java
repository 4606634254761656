package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The built distribution end to end, as separate OS processes: {@code idem publish} sends 6,000 orders of
 * which 20 % repeat an ID, {@code idem run} consumes them with the example handler from {@code handlers/},
 * and the handler's effects (ledger lines, or rows in the transactional mode) show one run per unique ID.
 * With a {@code kill -9} mid-stream and a restart, no unique ID is lost and re-runs stay within the work
 * in flight at the kill (none in the transactional mode). Each scenario prints its counts.
 */
class EndToEndIT {

    private static final int MESSAGES = 6_000;
    private static final int DUPLICATE_PERCENT = 20;
    private static final int UNIQUE = MESSAGES - MESSAGES * DUPLICATE_PERCENT / 100;
    private static final int MAX_IN_FLIGHT = 200;
    /**
     * The ActiveMQ transactional case runs grouped transactions, the path of {@code transactional.group} under a
     * kill: one transaction per message is covered by {@link SequenceGuardIT} and {@link OutboxIT}.
     */
    private static final int TRANSACTION_GROUP = 10;
    /**
     * The Kafka transactional case runs the example's batch handler ({@code BatchOrderPaymentHandler}), one
     * transaction per batch of up to this many, the path of batch handlers under a kill.
     */
    private static final int BATCH_SIZE = 50;
    private static final Duration PUBLISH_TIMEOUT = Duration.ofMinutes(3);
    private static final Duration SETTLE_TIMEOUT = Duration.ofMinutes(3);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    // ------------------------------------------------------------------ ActiveMQ, embedded in idem itself

    private static String embeddedActiveMq() {
        return """
                broker:
                  type: activemq
                  activemq:
                    embedded: { enabled: true, data-directory: "${IDEM_HOME}/data/activemq" }
                """;
    }

    @Test
    void activeMqWithCaffeine() throws Exception {
        scenario("ActiveMQ embedded + Caffeine", embeddedActiveMq(), "store: { type: caffeine }\n", "orders", false,
                false).run();
    }

    @Test
    void activeMqWithRedisSurvivesKillNine() throws Exception {
        scenario("ActiveMQ embedded + Redis, kill -9", embeddedActiveMq(), redisStore(), "orders", false, true).run();
    }

    @Test
    void activeMqWithTransactionalJdbcSurvivesKillNineWithoutReruns() throws Exception {
        scenario("ActiveMQ embedded + JDBC (H2 file) transactional, kill -9", embeddedActiveMq(), h2Store(), "orders",
                true, true).run();
    }

    // ------------------------------------------------------------------ Kafka, a KRaft broker in this JVM

    @Test
    void kafkaWithTransactionalPostgresSurvivesKillNineWithoutReruns() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "orders-" + run;
        kafka.createTopic(topic, 4);
        try {
            String broker = kafkaBroker(kafka);
            Scenario batches = scenario("Kafka (4 partitions) + JDBC (PostgreSQL) transactional, batch handler, kill -9",
                    broker, postgresStore(), topic, true, true);
            batches.batchSize = BATCH_SIZE;
            batches.run();
        } finally {
            kafka.deleteTopic(topic);
            sql(postgresUrl() + "?user=postgres", "DROP SCHEMA IF EXISTS idem_e2e_" + run + " CASCADE");
        }
    }

    @Test
    void kafkaWithRedisSurvivesKillNine() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "orders-" + run;
        kafka.createTopic(topic, 4);
        try {
            String broker = kafkaBroker(kafka);
            scenario("Kafka (4 partitions) + Redis, kill -9", broker, redisStore(), topic, false, true).run();
        } finally {
            kafka.deleteTopic(topic);
        }
    }

    /** A short session timeout, so the group notices the killed consumer quickly. */
    private static String kafkaBroker(EmbeddedKafka kafka) {
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: %s
                    client: { session.timeout.ms: 6000, heartbeat.interval.ms: 1000 }
                """.formatted(kafka.bootstrapServers());
    }

    // ------------------------------------------------------------------ RocketMQ, a name server and broker in a JVM of their own

    @Test
    void rocketMqWithTransactionalPostgresSurvivesKillNineWithoutReruns() throws Exception {
        RocketMqProcess rocketMq = RocketMqProcess.shared();
        String topic = "orders-" + run;
        rocketMq.createTopic(topic, 4);
        try {
            rocketMqScenario(scenario("RocketMQ (4 queues) + JDBC (PostgreSQL) transactional, kill -9",
                    rocketMq.brokerConfig(), postgresStore(), topic, true, true)).run();
        } finally {
            rocketMq.deleteTopic(topic);
            sql(postgresUrl() + "?user=postgres", "DROP SCHEMA IF EXISTS idem_e2e_" + run + " CASCADE");
        }
    }

    @Test
    void rocketMqWithRedisSurvivesKillNine() throws Exception {
        RocketMqProcess rocketMq = RocketMqProcess.shared();
        String topic = "orders-" + run;
        rocketMq.createTopic(topic, 4);
        try {
            rocketMqScenario(scenario("RocketMQ (4 queues) + Redis, kill -9", rocketMq.brokerConfig(), redisStore(),
                    topic, false, true)).run();
        } finally {
            rocketMq.deleteTopic(topic);
        }
    }

    /**
     * One {@code bin/idem run} at a time is the consumer group's only member (the killed one's connection closes with
     * it), so its client may rebalance every 100 ms: it owns the queues about a second sooner after each start.
     */
    private static Scenario rocketMqScenario(Scenario scenario) {
        scenario.idem.env.put("JAVA_OPTS", RocketMqProcess.singleConsumerJavaOpts());
        return scenario;
    }

    // ------------------------------------------------------------------ RabbitMQ, the local server

    @Test
    void rabbitMqWithRedisSurvivesKillNine() throws Exception {
        String uri = rabbitMqUri();
        String queue = "idem-e2e-" + run;
        try {
            scenario("RabbitMQ + Redis, kill -9", rabbitMqBroker(uri), redisStore(), queue, false, true).run();
        } finally {
            deleteQueue(uri, queue);
        }
    }

    @Test
    void rabbitMqWithMariaDbJdbc() throws Exception {
        String uri = rabbitMqUri();
        String url = ExternalService.locate("MariaDB", "IDEM_TEST_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test",
                "Start it with: start-stop-daemon --start --background --exec /usr/sbin/mariadbd", null);
        String store = """
                store:
                  type: jdbc
                  jdbc: { url: "%s", username: root, table: idem_e2e_%s }
                """.formatted(url, run);
        try {
            scenario("RabbitMQ + JDBC (MariaDB)", rabbitMqBroker(uri), store, "idem-e2e-" + run, false, false).run();
        } finally {
            sql(url + "?user=root", "DROP TABLE IF EXISTS idem_e2e_" + run);
            deleteQueue(uri, "idem-e2e-" + run);
        }
    }

    private static String rabbitMqUri() {
        return ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F",
                "Start it with: rabbitmq-server -detached", null);
    }

    /** The adapter declares the queue when idem run subscribes; publishing starts after that. */
    static String rabbitMqBroker(String uri) {
        return """
                broker:
                  type: rabbitmq
                  rabbitmq:
                    uri: "%s"
                    declare: true
                """.formatted(uri);
    }

    // ------------------------------------------------------------------ stores

    private String redisStore() {
        String uri = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        return """
                store:
                  type: redis
                  redis: { uri: "%s", key-prefix: "idem-e2e-%s:" }
                """.formatted(uri, run);
    }

    private static String h2Store() {
        return """
                store:
                  type: jdbc
                  jdbc: { url: "jdbc:h2:file:${IDEM_HOME}/data/idem-store;AUTO_SERVER=TRUE" }
                """;
    }

    private static String postgresUrl() {
        return ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test",
                "Start it with: pg_ctlcluster 15 main start", null);
    }

    private String postgresStore() {
        String url = postgresUrl();
        String schema = "idem_e2e_" + run;
        sql(url + "?user=postgres", "CREATE SCHEMA " + schema);
        return """
                store:
                  type: jdbc
                  jdbc: { url: "%s?currentSchema=%s", username: postgres }
                """.formatted(url, schema);
    }

    // ------------------------------------------------------------------ one scenario

    private Scenario scenario(String name, String broker, String store, String source, boolean transactional,
            boolean killMidway) {
        return new Scenario(name, broker, store, source, transactional, killMidway);
    }

    private final class Scenario {
        final String name;
        final String broker;
        final String store;
        final String source;
        final boolean transactional;
        final boolean killMidway;
        final Installation idem = Installation.in(dir);
        final int port = Installation.freePort();
        final Path ledger;
        volatile String lastReadProblem = "none";
        /** Above 0, the transactional handler is the batch handler, with this {@code batch.size}. */
        int batchSize;

        Scenario(String name, String broker, String store, String source, boolean transactional, boolean killMidway) {
            this.name = name;
            this.broker = broker;
            this.store = store;
            this.source = source;
            this.transactional = transactional;
            this.killMidway = killMidway;
            this.ledger = idem.home.resolve("data/order-payments.log");
            idem.env.put("IDEM_ORDER_LEDGER", ledger.toString());
        }

        String config() {
            String handler = !transactional ? "OrderPaymentHandler"
                    : batchSize > 0 ? "BatchOrderPaymentHandler" : "TransactionalOrderPaymentHandler";
            String grouping = !transactional ? ""
                    : batchSize > 0 ? "\n    payload: {format: json}\n    batch: {size: " + batchSize + ", linger: 5ms}"
                    : "\n    transactional.group: " + TRANSACTION_GROUP;
            return broker + store + """
                    pipelines:
                      orders:
                        source: %s
                        handler: dev.idem.examples.orders.%s
                        transactional: %s%s
                        concurrency: 8
                        max-in-flight: %d
                        lease: 5s
                        retention: 1h
                    runtime:
                      summary-interval: 5s
                      shutdown-timeout: 10s
                      http: { port: %d }
                    """.formatted(source, handler, transactional, grouping, MAX_IN_FLIGHT, port);
        }

        void run() throws Exception {
            idem.writeConfig(config());
            if (transactional) {
                createHandlerTables();
            }
            boolean embeddedBroker = broker.contains("embedded");
            Installation.Running first;
            Installation.Running publisher = null;
            if (embeddedBroker) {
                // The embedded broker lives in the idem process that has it: publish, then consume.
                Installation.Running sent = idem.start(publishArguments());
                assertPublished(sent);
                first = idem.start("run");
            } else {
                // A real broker: consume, as a user would, while the messages come in (and the kill falls).
                first = idem.start("run");
                waitFor(first, () -> first.outcomes(port).containsKey("processed"), () -> "the pipeline to start");
                publisher = idem.start(publishArguments());
            }
            long processedBeforeKill = 0;
            int effectsBeforeRestart = 0;
            Installation.Running last = first;
            if (killMidway) {
                waitFor(first, () -> first.outcomes(port).getOrDefault("processed", 0L) >= 2_500,
                        () -> "2,500 processed before the kill");
                processedBeforeKill = first.outcomes(port).getOrDefault("processed", 0L);
                first.kill();
                if (h2()) {
                    // No process holds the H2 file between the kill and the restart: count what was committed.
                    effectsBeforeRestart = effectsWhileStopped();
                }
                last = idem.start("run");
            }
            Installation.Running running = last;
            if (publisher != null) {
                assertPublished(publisher);
            }
            if (h2()) {
                // The H2 file is the idem process's while it runs; read it once the process has stopped. Until then,
                // its count of processed messages tells when every unique ID not committed before the kill has run.
                long left = UNIQUE - effectsBeforeRestart;
                waitFor(running, () -> running.outcomes(port).getOrDefault("processed", 0L) >= left,
                        () -> left + " processed after the restart (now " + running.outcomes(port) + ")");
                settle(running, 5);
            } else {
                waitFor(running, () -> effects().size() == UNIQUE, () -> UNIQUE + " unique IDs with an effect (now "
                        + effects().size() + "; last problem reading them: " + lastReadProblem + ")");
                settle(running, 3);
            }
            if (batchSize > 0) {
                double calls = running.metric(port, "idem_batch_size_count");
                double messages = running.metric(port, "idem_batch_size_sum");
                System.out.printf("[e2e] %s: %,.0f messages in %,.0f batch calls after the restart%n", name, messages,
                        calls);
                assertThat(messages / calls).as("messages per batch call").isGreaterThan(1.5);
            }
            int exit = running.terminate(Duration.ofSeconds(60));
            assertThat(exit).as("SIGTERM ends a graceful stop with 128+15\n" + running.log()).isEqualTo(143);
            assertThat(running.log()).contains("Stopped;");

            Map<String, Integer> runs = effects();
            long reruns = runs.values().stream().mapToLong(n -> n - 1).sum();
            System.out.printf("[e2e] %s: published %,d (%,d unique); %,d unique IDs with an effect, %,d re-runs%s%n",
                    name, MESSAGES, UNIQUE, runs.size(), reruns,
                    killMidway ? " after kill -9 at " + processedBeforeKill + " processed"
                            + (h2() ? " (" + effectsBeforeRestart + " committed)" : "") : "");
            for (int n = 1; n <= UNIQUE; n++) {
                assertThat(runs).as("order-msg-%d was processed", n).containsKey("order-msg-" + n);
            }
            if (transactional || !killMidway) {
                assertThat(reruns).as("handler re-runs").isZero();
            } else {
                assertThat(reruns).as("re-runs are bounded by the work in flight at the kill").isLessThanOrEqualTo(MAX_IN_FLIGHT);
            }
        }

        private String[] publishArguments() {
            return new String[] {"publish", "--count", Integer.toString(MESSAGES), "--duplicates",
                    Integer.toString(DUPLICATE_PERCENT), "--id", "order-msg-", "--key", "order-{n}", "--threads", "4"};
        }

        private void assertPublished(Installation.Running publisher) throws InterruptedException {
            assertThat(publisher.process.waitFor(PUBLISH_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("idem publish ends\n%s", publisher.log()).isTrue();
            assertThat(publisher.process.exitValue()).as(publisher.log()).isZero();
            assertThat(publisher.log()).contains(String.format("Published %,d message(s)", MESSAGES))
                    .contains(String.format("%,d unique IDs", UNIQUE));
        }

        /** Waits until the counters stop moving for {@code seconds}: every message, duplicates too, is settled. */
        private void settle(Installation.Running running, int seconds) {
            AtomicReference<Map<String, Long>> seen = new AtomicReference<>(running.outcomes(port));
            AtomicLong changedAt = new AtomicLong(System.nanoTime());
            waitFor(running, () -> {
                Map<String, Long> now = running.outcomes(port);
                if (!now.equals(seen.getAndSet(now))) {
                    changedAt.set(System.nanoTime());
                }
                return System.nanoTime() - changedAt.get() >= TimeUnit.SECONDS.toNanos(seconds);
            }, () -> "the outcome counters to stay unchanged for " + seconds + "s");
        }

        private boolean h2() {
            return store.contains("jdbc:h2:");
        }

        /**
         * The unique IDs with an effect in the H2 file while no process has it open, read as soon as H2 lets this
         * process open it (a killed process's lock file is taken over once H2 sees it is stale); the connection is
         * closed before any process opens the file again.
         */
        private int effectsWhileStopped() {
            AtomicReference<Integer> count = new AtomicReference<>();
            await().atMost(SETTLE_TIMEOUT).pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() -> {
                try (Connection c = DriverManager.getConnection(jdbcUrl(), jdbcUser(), "");
                        Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery("SELECT COUNT(DISTINCT message_id) FROM payment_events")) {
                    rs.next();
                    count.set(rs.getInt(1));
                }
            });
            return count.get();
        }

        /** Handler runs per message ID: ledger lines, or payment rows in the transactional mode. */
        Map<String, Integer> effects() {
            Map<String, Integer> runs = new HashMap<>();
            if (transactional) {
                try (Connection c = DriverManager.getConnection(jdbcUrl(), jdbcUser(), "");
                        Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery("SELECT message_id, COUNT(*) FROM payment_events GROUP BY message_id")) {
                    while (rs.next()) {
                        runs.put(rs.getString(1), rs.getInt(2));
                    }
                } catch (SQLException e) {
                    lastReadProblem = e.toString();
                    return runs;
                }
                return runs;
            }
            if (!Files.exists(ledger)) {
                return runs;
            }
            try {
                for (String line : Files.readAllLines(ledger, StandardCharsets.UTF_8)) {
                    int tab = line.indexOf('\t');
                    if (tab > 0) {
                        runs.merge(line.substring(0, tab), 1, Integer::sum);
                    }
                }
            } catch (IOException e) {
                return runs;
            }
            return runs;
        }

        private String jdbcUrl() {
            int start = store.indexOf("url: \"") + 6;
            return store.substring(start, store.indexOf('"', start)).replace("${IDEM_HOME}", idem.home.toString());
        }

        private String jdbcUser() {
            return store.contains("username: postgres") ? "postgres" : store.contains("username: root") ? "root" : "";
        }

        private void createHandlerTables() {
            for (String ddl : List.of(
                    "CREATE TABLE IF NOT EXISTS order_status (order_id VARCHAR(64) NOT NULL PRIMARY KEY,"
                            + " status VARCHAR(16) NOT NULL)",
                    "CREATE TABLE IF NOT EXISTS payment_events (message_id VARCHAR(512) NOT NULL, order_id VARCHAR(64)"
                            + " NOT NULL, event VARCHAR(16) NOT NULL, amount DECIMAL(19, 2) NOT NULL,"
                            + " outcome VARCHAR(32) NOT NULL)")) {
                try (Connection c = DriverManager.getConnection(jdbcUrl(), jdbcUser(), "");
                        Statement s = c.createStatement()) {
                    s.execute(ddl);
                } catch (SQLException e) {
                    throw new AssertionError("Creating the handler's tables failed: " + e, e);
                }
            }
        }
    }

    /** Polls {@code condition} until it holds; fails early, with the process's log, if {@code bin/idem} exits. */
    private static void waitFor(Installation.Running running, Callable<Boolean> condition, Supplier<String> what) {
        try {
            await().atMost(SETTLE_TIMEOUT).pollInterval(Duration.ofMillis(200))
                    .failFast("bin/idem exited", () -> !running.process.isAlive())
                    .until(condition);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError("Waiting for " + what.get() + ": " + e.getMessage() + "\n" + running.log(), e);
        }
    }

    private static void deleteQueue(String uri, String queue) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        try (com.rabbitmq.client.Connection c = factory.newConnection(); Channel ch = c.createChannel()) {
            ch.queueDelete(queue);
            ch.queueDelete(queue + ".DLQ");
        }
    }

    private static void sql(String url, String statement) {
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            s.execute(statement);
        } catch (SQLException e) {
            throw new AssertionError(statement + " failed: " + e, e);
        }
    }
}
