package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.cli.fault.FaultHandler;
import dev.idem.testkit.ExternalService;
import java.io.File;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The broker connection lost mid-stream, with {@code bin/idem run} consuming a backlog that {@code idem publish} sent
 * first ({@value #MESSAGES} messages, {@value #REPEAT_PERCENT} % repeats), while {@link FaultHandler} works
 * {@value #WORK_MILLIS} ms per message so the stream lasts:
 * <ul>
 * <li>RabbitMQ (the local server, in a virtual host of this test's own, so no other client is touched):
 *     {@code rabbitmqctl close_all_connections} once 25 % and again once 60 % of the unique IDs are processed;
 *     the consumer must come back each time, and with the Redis store in plain mode nothing may be lost, with
 *     duplicates of at most {@code max-in-flight} per loss.</li>
 * <li>ActiveMQ (a persistent KahaDB broker in this JVM on a fixed port, reached through {@code failover:}): the
 *     broker is stopped for {@link #ACTIVEMQ_DOWN} once 30 % of the unique IDs are processed and a new one started
 *     on the same port and data; with the JDBC store on PostgreSQL in transactional mode nothing may
 *     be lost and nothing duplicated.</li>
 * </ul>
 * Each case prints one summary line with how long the consumer took to come back.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class BrokerConnectionLossIT {

    private static final int MESSAGES = 4_000;
    private static final int REPEAT_PERCENT = 20;
    private static final int UNIQUE = MESSAGES - MESSAGES * REPEAT_PERCENT / 100;
    private static final int CONCURRENCY = 4;
    private static final int MAX_IN_FLIGHT = 100;
    private static final int WORK_MILLIS = 15;
    private static final double[] RABBIT_CLOSE_AT = {0.25, 0.6};
    private static final double ACTIVEMQ_STOP_AT = 0.3;
    private static final Duration ACTIVEMQ_DOWN = Duration.ofSeconds(3);
    private static final Duration TIMEOUT = Duration.ofMinutes(2);
    private static final Duration COMMAND_TIMEOUT = Duration.ofMinutes(1);
    private static final Pattern CLOSED = Pattern.compile("Closed (\\d+) connections");

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    /** One injected connection loss and the consumer's way back. */
    private record Disruption(long withEffect, long connectionsClosed, long backAfterMillis) {
    }

    // ------------------------------------------------------------------ RabbitMQ

    @Test
    void rabbitMqConnectionsClosedMidStreamLoseNothing() throws Exception {
        long started = System.nanoTime();
        LocalTool rabbitmqctl = LocalTool.locate("rabbitmqctl", "IDEM_TEST_RABBITMQCTL",
                "It comes with the RabbitMQ server; run the test where it can reach the server's node.");
        URI base = URI.create(ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2F", "Start it with: rabbitmq-server -detached", null));
        String user = base.getUserInfo() == null ? "guest" : base.getUserInfo().split(":", 2)[0];
        String vhost = "idem-fault-" + run;
        String uri = base.getScheme() + "://" + base.getRawAuthority() + "/" + vhost;
        String queue = "fault-orders";
        String redis = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        String store = """
                store:
                  type: redis
                  redis: { uri: "%s", key-prefix: "idem-fault-%s:" }
                """.formatted(redis, run);
        FaultHistory history = FaultHistory.plain(dir.resolve("runs"));
        Set<String> unique = ids("rabbit-" + run + "-");

        rabbitmqctl.check(COMMAND_TIMEOUT, "add_vhost", vhost);
        try (IdemCluster cluster = new IdemCluster(dir, 1, port -> config(EndToEndIT.rabbitMqBroker(uri), store,
                queue, false, port), Map.of(FaultHandler.WORK_MS_ENV, Integer.toString(WORK_MILLIS)))) {
            rabbitmqctl.check(COMMAND_TIMEOUT, "set_permissions", "-p", vhost, user, ".*", ".*", ".*");
            // Declared as the adapter declares it (durable, classic), so the messages wait before idem runs.
            rabbit(uri, channel -> channel.queueDeclare(queue, true, false, false, null));
            IdemCluster.Node node = cluster.node(1);
            publish(node.idem, "rabbit-" + run + "-");
            cluster.startAndAwaitServing(TIMEOUT);

            List<Disruption> disruptions = new ArrayList<>();
            for (double at : RABBIT_CLOSE_AT) {
                cluster.awaitUntil(() -> history.withEffect(unique) >= at * UNIQUE && consumers(uri, queue) > 0,
                        () -> (int) (at * 100) + " % of the unique IDs processed, with the consumer subscribed",
                        TIMEOUT);
                String out = rabbitmqctl.check(COMMAND_TIMEOUT, "close_all_connections", "--vhost", vhost, "--limit",
                        "1000", "idem fault test: connection loss");
                long closedAt = System.nanoTime();
                long withEffect = history.withEffect(unique);
                cluster.awaitUntil(() -> consumers(uri, queue) > 0, () -> "the consumer to subscribe again", TIMEOUT);
                disruptions.add(new Disruption(withEffect, closedConnections(out),
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closedAt)));
            }
            cluster.awaitUntil(() -> history.withEffect(unique) == UNIQUE && ready(uri, queue) == 0,
                    () -> "every published ID to have an effect (now " + history.withEffect(unique) + " of " + UNIQUE
                            + ") and the queue to be empty", TIMEOUT);
            cluster.awaitQuiet(Duration.ofSeconds(3), () -> history.runs().size(), TIMEOUT);
            cluster.terminateAll();

            FaultHistory.Tally tally = history.tally(unique);
            long bound = (long) MAX_IN_FLIGHT * disruptions.size();
            long resubscribed = count(node.current.log(), "Consuming queue '" + queue + "' again on a new channel");
            System.out.printf("[fault] broker connection loss, RabbitMQ + Redis plain: published %,d (%,d unique);"
                    + " rabbitmqctl close_all_connections %dx %s; lost %d; duplicate effects %d (bound %d = %d in"
                    + " flight x %d); handler runs %,d; took %ds%n", MESSAGES, UNIQUE, disruptions.size(),
                    describe(disruptions), tally.lost().size(), tally.duplicateEffects(), bound, MAX_IN_FLIGHT,
                    disruptions.size(), tally.runs(), IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(disruptions).as("connection losses: each closed idem's connection, mid-stream")
                    .allSatisfy(d -> {
                        assertThat(d.connectionsClosed()).isPositive();
                        assertThat(d.withEffect()).isLessThan(UNIQUE);
                    });
            softly.assertThat(resubscribed).as("'consuming again' lines in idem's log").isGreaterThanOrEqualTo(
                    disruptions.size());
            FaultHistory.assertNoneLostNorUnexpected(softly, tally);
            softly.assertThat(tally.duplicateEffects()).as("duplicate effects, at most max-in-flight per loss")
                    .isLessThanOrEqualTo(bound);
            softly.assertAll();
        } finally {
            rabbitmqctl.run(COMMAND_TIMEOUT, "delete_vhost", vhost);
        }
    }

    private interface ChannelWork<T> {
        T apply(Channel channel) throws Exception;
    }

    /** A short-lived connection of the test's own: a connection loss closes every connection of the virtual host. */
    private static <T> T rabbit(String uri, ChannelWork<T> work) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        try (Connection connection = factory.newConnection("idem-fault-it"); Channel channel = connection.createChannel()) {
            return work.apply(channel);
        }
    }

    private static long consumers(String uri, String queue) throws Exception {
        return rabbit(uri, channel -> channel.queueDeclarePassive(queue).getConsumerCount());
    }

    private static long ready(String uri, String queue) throws Exception {
        return rabbit(uri, channel -> channel.queueDeclarePassive(queue).getMessageCount());
    }

    private static long closedConnections(String rabbitmqctlOutput) {
        Matcher m = CLOSED.matcher(rabbitmqctlOutput);
        if (!m.find()) {
            throw new AssertionError("rabbitmqctl close_all_connections did not say how many it closed:\n"
                    + rabbitmqctlOutput);
        }
        return Long.parseLong(m.group(1));
    }

    // ------------------------------------------------------------------ ActiveMQ

    @Test
    void activeMqBrokerRestartedMidStreamWithFailoverLosesNothingAndDuplicatesNothing() throws Exception {
        long started = System.nanoTime();
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_fault_" + run;
        FaultHistory history = FaultHistory.transactional(dir.resolve("runs"),
                url + "?user=postgres&currentSchema=" + schema, "fault_effects");
        String store = """
                store:
                  type: jdbc
                  jdbc: { url: "%s?currentSchema=%s", username: postgres }
                """.formatted(url, schema);
        int port = Installation.freePort();
        String queue = "fault-orders";
        String broker = """
                broker:
                  type: activemq
                  activemq:
                    url: "failover:(tcp://127.0.0.1:%d)?initialReconnectDelay=100&maxReconnectDelay=1000"
                """.formatted(port);
        Set<String> unique = ids("amq-" + run + "-");

        history.execute("CREATE SCHEMA " + schema);
        try (ActiveMq activeMq = new ActiveMq(dir.resolve("activemq").toFile(), port);
                IdemCluster cluster = new IdemCluster(dir, 1, p -> config(broker, store, queue, true, p),
                        Map.of(FaultHandler.TABLE_ENV, "fault_effects", FaultHandler.WORK_MS_ENV,
                                Integer.toString(WORK_MILLIS)))) {
            history.createTable();
            activeMq.start();
            IdemCluster.Node node = cluster.node(1);
            publish(node.idem, "amq-" + run + "-");
            cluster.startAndAwaitServing(TIMEOUT);

            cluster.awaitUntil(() -> history.withEffect(unique) >= ACTIVEMQ_STOP_AT * UNIQUE,
                    () -> (int) (ACTIVEMQ_STOP_AT * 100) + " % of the unique IDs processed", TIMEOUT);
            activeMq.stop();
            long withEffectAtStop = history.withEffect(unique);
            cluster.hold(ACTIVEMQ_DOWN, () -> { });
            activeMq.start();
            long restartedAt = System.currentTimeMillis();
            cluster.awaitUntil(() -> history.firstRunAtOrAfter(restartedAt).isPresent(),
                    () -> "a message processed after the broker restarted", TIMEOUT);
            long backAfter = history.firstRunAtOrAfter(restartedAt).getAsLong() - restartedAt;
            cluster.awaitUntil(() -> history.withEffect(unique) == UNIQUE && activeMq.depth(queue) == 0,
                    () -> "every published ID to have an effect (now " + history.withEffect(unique) + " of " + UNIQUE
                            + ") and the queue to be empty", TIMEOUT);
            cluster.awaitQuiet(Duration.ofSeconds(3), () -> history.runs().size(), TIMEOUT);
            cluster.terminateAll();

            FaultHistory.Tally tally = history.tally(unique);
            long deadLettered = activeMq.depth("ActiveMQ.DLQ") + activeMq.depth(queue + ".DLQ");
            System.out.printf("[fault] broker connection loss, ActiveMQ (failover:, broker restarted on its KahaDB) +"
                    + " JDBC (PostgreSQL) transactional: published %,d (%,d unique); broker down %d ms at %,d of %,d"
                    + " unique IDs with an effect; first run %d ms after the restart; lost %d; duplicate effects %d;"
                    + " dead-lettered %d; handler runs %,d (rolled back %d); took %ds%n", MESSAGES, UNIQUE,
                    ACTIVEMQ_DOWN.toMillis(), withEffectAtStop, UNIQUE, backAfter, tally.lost().size(),
                    tally.duplicateEffects(), deadLettered, tally.runs(), tally.reruns(),
                    IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(withEffectAtStop).as("unique IDs with an effect when the broker stopped: mid-stream")
                    .isLessThan(UNIQUE);
            softly.assertThat(node.current.log()).as("idem's log").contains("the connection to ActiveMQ is back");
            FaultHistory.assertNoneLostNorUnexpected(softly, tally);
            softly.assertThat(tally.duplicateEffects()).as("duplicate effects in transactional mode").isZero();
            softly.assertThat(deadLettered).as("messages in ActiveMQ.DLQ and " + queue + ".DLQ").isZero();
            softly.assertAll();
        } finally {
            history.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    /**
     * A persistent broker in this JVM on a fixed port; a restart on the same KahaDB data keeps the messages. Also used
     * by {@code SequenceGuardIT}.
     */
    static final class ActiveMq implements AutoCloseable {
        private final File data;
        private final int port;
        private BrokerService broker;

        ActiveMq(File data, int port) {
            this.data = data;
            this.port = port;
        }

        void start() throws Exception {
            BrokerService b = new BrokerService();
            b.setBrokerName("idem-fault");
            b.setPersistent(true);
            b.setUseJmx(false);
            b.setUseShutdownHook(false);
            b.setDataDirectoryFile(data);
            b.setTmpDataDirectory(new File(data, "tmp"));
            KahaDBPersistenceAdapter kahaDb = new KahaDBPersistenceAdapter();
            kahaDb.setDirectory(new File(data, "kahadb"));
            b.setPersistenceAdapter(kahaDb);
            b.addConnector("tcp://127.0.0.1:" + port);
            broker = b;
            b.start();
            assertThat(b.waitUntilStarted(60_000)).as("the ActiveMQ broker on port %d started", port).isTrue();
        }

        void stop() throws Exception {
            broker.stop();
            broker.waitUntilStopped();
        }

        /** The messages {@code queue} holds. */
        long depth(String queue) throws Exception {
            return broker.getDestination(new ActiveMQQueue(queue)).getDestinationStatistics().getMessages().getCount();
        }

        @Override
        public void close() throws Exception {
            if (broker != null && !broker.isStopped()) {
                stop();
            }
        }
    }

    // ------------------------------------------------------------------ both

    /** {@code idem publish}: {@value #MESSAGES} messages, {@value #REPEAT_PERCENT} % of them repeats. */
    private static void publish(Installation idem, String idPrefix) {
        Installation.Result published = idem.run(COMMAND_TIMEOUT, "publish", "--count", Integer.toString(MESSAGES),
                "--duplicates", Integer.toString(REPEAT_PERCENT), "--id", idPrefix, "--key", "order-{n}", "--threads",
                "4");
        assertThat(published.exitCode()).as(published.toString()).isZero();
        assertThat(published.out()).contains(String.format("Published %,d message(s)", MESSAGES))
                .contains(String.format("%,d unique IDs", UNIQUE));
    }

    private static Set<String> ids(String prefix) {
        return IntStream.rangeClosed(1, UNIQUE).mapToObj(n -> prefix + n).collect(Collectors.toUnmodifiableSet());
    }

    private static String config(String broker, String store, String queue, boolean transactional, int port) {
        return broker + store + """
                pipelines:
                  orders:
                    source: %s
                    handler: %s
                    transactional: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 5s
                    retention: 10m
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(queue, FaultHandler.class.getName(), transactional, CONCURRENCY, MAX_IN_FLIGHT, port);
    }

    private static long count(String text, String needle) {
        long n = 0;
        for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length())) {
            n++;
        }
        return n;
    }

    private static String describe(List<Disruption> disruptions) {
        return disruptions.stream().map(d -> String.format("[closed %d at %,d of %,d with an effect; consumer back"
                + " %d ms after rabbitmqctl returned]", d.connectionsClosed(), d.withEffect(), UNIQUE, d.backAfterMillis()))
                .collect(Collectors.joining(" "));
    }
}
