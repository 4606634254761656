package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.cli.fault.FaultHandler;
import dev.idem.testkit.ExternalService;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scale-out under crashes: three {@code bin/idem run} processes in one Kafka consumer group on a topic of four
 * partitions share one dedup store, while a producer in this JVM publishes 12,000 messages at {@value #RATE} per
 * second, {@value #REPEAT_PERCENT} % of them repeats (half right after their original, half 2 to 10 seconds later).
 * Every 3 seconds, one process at a time, in turn, is killed with {@code kill -9} and restarted at once. Once the
 * stream ended and everything settled, the history must show every published ID with an effect (none lost): with the
 * JDBC store on PostgreSQL in transactional mode (grouped transactions of up to {@value #TRANSACTION_GROUP} messages,
 * each under a savepoint) exactly one effect each, with the Redis store in plain mode duplicates of at most
 * {@code max-in-flight} per kill. Each case prints one summary line.
 *
 * <p>RocketMQ runs the transactional case, shorter: three processes in one consumer group on a topic of four queues
 * (the embedded name server and broker, {@link RocketMqProcess}), 6,000 messages at the same rate, a kill every 2
 * seconds, at least as many kills.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ScaleOutIT {

    private static final int NODES = 3;
    private static final int PARTITIONS = 4;
    private static final int REPEAT_PERCENT = 20;
    private static final int RATE = 500;
    /** Kafka's: 12,000 messages, a kill every 3 s; at least 5 kills, so that the faults struck while it flowed. */
    private static final Shape KAFKA = new Shape(12_000, Duration.ofSeconds(3), 5);
    /** RocketMQ's, shorter: 6,000 messages, a kill every 2 s, at least 5 kills. */
    private static final Shape ROCKETMQ = new Shape(6_000, Duration.ofSeconds(2), 5);
    private static final int CONCURRENCY = 8;
    private static final int MAX_IN_FLIGHT = 100;
    /** Transactional mode runs with grouped transactions: exactly once must hold with savepoints too. */
    private static final int TRANSACTION_GROUP = 10;
    private static final int WORK_MILLIS = 2;
    private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
    private static final Duration SETTLE_TIMEOUT = Duration.ofMinutes(2);
    private static final Duration QUIET = Duration.ofSeconds(3);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void transactionalPostgresStoreLosesNothingAndDuplicatesNothingWhileProcessesAreKilledInTurn() throws Exception {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_fault_" + run;
        FaultHistory history = FaultHistory.transactional(dir.resolve("runs"),
                url + "?user=postgres&currentSchema=" + schema, "fault_effects");
        history.execute("CREATE SCHEMA " + schema);
        try {
            history.createTable();
            String store = """
                    store:
                      type: jdbc
                      jdbc: { url: "%s?currentSchema=%s", username: postgres }
                    """.formatted(url, schema);
            try (KafkaTopic topic = new KafkaTopic(EmbeddedKafka.shared(), "fault-scale-" + run)) {
                scenario("Kafka (4 partitions) + JDBC (PostgreSQL) transactional", topic, KAFKA, store, history);
            }
        } finally {
            history.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void rocketMqWithTransactionalPostgresStoreLosesNothingAndDuplicatesNothingWhileProcessesAreKilledInTurn()
            throws Exception {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_fault_" + run;
        FaultHistory history = FaultHistory.transactional(dir.resolve("runs"),
                url + "?user=postgres&currentSchema=" + schema, "fault_effects");
        history.execute("CREATE SCHEMA " + schema);
        try {
            history.createTable();
            String store = """
                    store:
                      type: jdbc
                      jdbc: { url: "%s?currentSchema=%s", username: postgres }
                    """.formatted(url, schema);
            try (RocketMqTopic topic = new RocketMqTopic(RocketMqProcess.shared(), "fault-scale-" + run)) {
                scenario("RocketMQ (4 queues) + JDBC (PostgreSQL) transactional", topic, ROCKETMQ, store, history);
            }
        } finally {
            history.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void plainRedisStoreLosesNothingAndReRunsAtMostTheInFlightWorkOfEachKill() throws Exception {
        String uri = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        String store = """
                store:
                  type: redis
                  redis: { uri: "%s", key-prefix: "idem-fault-%s:" }
                """.formatted(uri, run);
        try (KafkaTopic topic = new KafkaTopic(EmbeddedKafka.shared(), "fault-scale-" + run)) {
            scenario("Kafka (4 partitions) + Redis plain", topic, KAFKA, store,
                    FaultHistory.plain(dir.resolve("runs")));
        }
    }

    /** How long a case's stream is and how often a process is killed while it flows. */
    private record Shape(int messages, Duration killEvery, int minKills) {
    }

    private void scenario(String name, Topic topic, Shape shape, String store, FaultHistory history)
            throws Exception {
        long started = System.nanoTime();
        MessageStream stream = MessageStream.plan("scale-" + run + "-", shape.messages(), REPEAT_PERCENT, RATE, 7);
        Map<String, String> env = history.transactional() ? Map.of(FaultHandler.TABLE_ENV, "fault_effects",
                FaultHandler.WORK_MS_ENV, Integer.toString(WORK_MILLIS))
                : Map.of(FaultHandler.WORK_MS_ENV, Integer.toString(WORK_MILLIS));
        try (IdemCluster cluster = new IdemCluster(dir, NODES, port -> config(topic, store, history, port), env)) {
            cluster.startAndAwaitServing(START_TIMEOUT);
            topic.publish(stream);
            killInTurnWhileTheStreamFlows(cluster, stream, shape.killEvery());
            stream.done().join();
            cluster.awaitUntil(() -> history.withEffect(stream.uniqueIds) == stream.uniqueIds.size(),
                    () -> "every published ID to have an effect (now " + history.withEffect(stream.uniqueIds) + " of "
                            + stream.uniqueIds.size() + ")", SETTLE_TIMEOUT);
            cluster.awaitQuiet(QUIET, () -> history.runs().size(), SETTLE_TIMEOUT);
            cluster.terminateAll();

            FaultHistory.Tally tally = history.tally(stream.uniqueIds);
            int kills = cluster.kills();
            long bound = (long) MAX_IN_FLIGHT * kills;
            System.out.printf("[fault] scale-out, %s, %d processes: published %,d (%,d unique, %,d repeats, %,d of them"
                    + " 2-10 s after the original) at %d/s; kills %d; lost %d; duplicate effects %d%s; handler runs"
                    + " %,d (re-runs %d); took %ds%n", name, NODES, stream.messages.size(), tally.unique(),
                    stream.repeats(), stream.repeatsSecondsApart(), RATE, kills, tally.lost().size(),
                    tally.duplicateEffects(), history.transactional() ? ""
                            : " (bound " + bound + " = " + MAX_IN_FLIGHT + " in flight x " + kills + " kills)",
                    tally.runs(), tally.reruns(), IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(kills).as("kill -9s while the stream flowed").isGreaterThanOrEqualTo(shape.minKills());
            FaultHistory.assertNoneLostNorUnexpected(softly, tally);
            if (history.transactional()) {
                softly.assertThat(tally.duplicateEffects()).as("duplicate effects in transactional mode").isZero();
            } else {
                softly.assertThat(tally.duplicateEffects()).as("duplicate effects, at most max-in-flight per kill")
                        .isLessThanOrEqualTo(bound);
            }
            softly.assertAll();
        }
    }

    /**
     * Kills one process every {@code killEvery}, in turn, and restarts it at once, until the stream is sent. The kills
     * keep a fixed timeline from the first call ({@code killEvery}, twice that, ...), so the time a kill and a restart
     * take (long on a loaded machine) does not push the later ones back, and the stream's length decides the count.
     */
    private static void killInTurnWhileTheStreamFlows(IdemCluster cluster, MessageStream stream, Duration killEvery)
            throws InterruptedException {
        long start = System.nanoTime();
        for (int turn = 0; ; turn++) {
            long due = start + (turn + 1) * killEvery.toNanos();
            cluster.awaitUntil(() -> stream.done().isDone() || System.nanoTime() - due >= 0, () -> "the next kill",
                    killEvery.plusMinutes(1));
            if (stream.done().isDone()) {
                return;
            }
            cluster.node(turn % NODES + 1).killAndRestart();
        }
    }

    /** Where the stream goes: a topic of {@value #PARTITIONS} partitions or queues of this case's own. */
    private interface Topic extends AutoCloseable {
        /** The {@code broker:} section of a node's configuration, with a consumer group of this case's own. */
        String config();

        String name();

        /** Starts publishing {@code stream} to the topic. */
        void publish(MessageStream stream);

        @Override
        void close();
    }

    private final class KafkaTopic implements Topic {
        private final EmbeddedKafka kafka;
        private final String topic;

        KafkaTopic(EmbeddedKafka kafka, String topic) {
            this.kafka = kafka;
            this.topic = topic;
            kafka.createTopic(topic, PARTITIONS);
        }

        /** A short session timeout, so the group notices a killed member quickly. */
        @Override
        public String config() {
            return """
                    broker:
                      type: kafka
                      kafka:
                        bootstrap-servers: %s
                        group-id-prefix: "fault-%s-"
                        client: { session.timeout.ms: 6000, heartbeat.interval.ms: 1000 }
                    """.formatted(kafka.bootstrapServers(), run);
        }

        @Override
        public String name() {
            return topic;
        }

        @Override
        public void publish(MessageStream stream) {
            stream.publishToKafka(kafka.bootstrapServers(), topic);
        }

        @Override
        public void close() {
            kafka.deleteTopic(topic);
        }
    }

    /**
     * A topic of {@value #PARTITIONS} queues on the embedded RocketMQ. The broker notices a killed member as its
     * connection closes, and the group's other members take its queues at once.
     */
    private final class RocketMqTopic implements Topic {
        private final RocketMqProcess rocketMq;
        private final String topic;

        RocketMqTopic(RocketMqProcess rocketMq, String topic) {
            this.rocketMq = rocketMq;
            this.topic = topic;
            rocketMq.createTopic(topic, PARTITIONS);
        }

        @Override
        public String config() {
            return rocketMq.brokerConfig("fault-" + run + "-");
        }

        @Override
        public String name() {
            return topic;
        }

        @Override
        public void publish(MessageStream stream) {
            stream.publishToRocketMq(rocketMq, topic);
        }

        @Override
        public void close() {
            rocketMq.deleteTopic(topic);
        }
    }

    private String config(Topic topic, String store, FaultHistory history, int port) {
        return topic.config() + store + """
                pipelines:
                  orders:
                    source: %s
                    handler: %s
                    transactional: %s
                    transactional.group: %d
                    concurrency: %d
                    max-in-flight: %d
                    lease: 5s
                    retention: 10m
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(topic.name(), FaultHandler.class.getName(), history.transactional(),
                history.transactional() ? TRANSACTION_GROUP : 1, CONCURRENCY, MAX_IN_FLIGHT, port);
    }
}
