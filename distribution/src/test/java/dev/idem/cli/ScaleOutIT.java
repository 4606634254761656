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
 * partitions share one dedup store, while a producer in this JVM publishes {@value #MESSAGES} messages at
 * {@value #RATE} per second, {@value #REPEAT_PERCENT} % of them repeats (half right after their original, half 2 to
 * 10 seconds later). Every {@link #KILL_EVERY}, one process at a time, in turn, is killed with {@code kill -9} and
 * restarted at once. Once the stream ended and everything settled, the history must show every published ID with
 * an effect (none lost): with the JDBC store on PostgreSQL in transactional mode (grouped transactions of up to
 * {@value #TRANSACTION_GROUP} messages, each under a savepoint) exactly one effect each, with the
 * Redis store in plain mode duplicates of at most {@code max-in-flight} per kill. Each case prints one summary line.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ScaleOutIT {

    private static final int NODES = 3;
    private static final int PARTITIONS = 4;
    private static final int MESSAGES = 12_000;
    private static final int REPEAT_PERCENT = 20;
    private static final int RATE = 500;
    private static final Duration KILL_EVERY = Duration.ofSeconds(3);
    /** Kills the stream must see at least, so that the faults really struck while it flowed. */
    private static final int MIN_KILLS = 5;
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
            scenario("Kafka (4 partitions) + JDBC (PostgreSQL) transactional", store, history);
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
        scenario("Kafka (4 partitions) + Redis plain", store, FaultHistory.plain(dir.resolve("runs")));
    }

    private void scenario(String name, String store, FaultHistory history) throws Exception {
        long started = System.nanoTime();
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "fault-scale-" + run;
        kafka.createTopic(topic, PARTITIONS);
        MessageStream stream = MessageStream.plan("scale-" + run + "-", MESSAGES, REPEAT_PERCENT, RATE, 7);
        Map<String, String> env = history.transactional() ? Map.of(FaultHandler.TABLE_ENV, "fault_effects",
                FaultHandler.WORK_MS_ENV, Integer.toString(WORK_MILLIS))
                : Map.of(FaultHandler.WORK_MS_ENV, Integer.toString(WORK_MILLIS));
        try (IdemCluster cluster = new IdemCluster(dir, NODES, port -> config(kafka, store, topic, history, port), env)) {
            cluster.startAndAwaitServing(START_TIMEOUT);
            stream.publishToKafka(kafka.bootstrapServers(), topic);
            killInTurnWhileTheStreamFlows(cluster, stream);
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
            softly.assertThat(kills).as("kill -9s while the stream flowed").isGreaterThanOrEqualTo(MIN_KILLS);
            FaultHistory.assertNoneLostNorUnexpected(softly, tally);
            if (history.transactional()) {
                softly.assertThat(tally.duplicateEffects()).as("duplicate effects in transactional mode").isZero();
            } else {
                softly.assertThat(tally.duplicateEffects()).as("duplicate effects, at most max-in-flight per kill")
                        .isLessThanOrEqualTo(bound);
            }
            softly.assertAll();
        } finally {
            kafka.deleteTopic(topic);
        }
    }

    /** Kills one process every {@link #KILL_EVERY}, in turn, and restarts it at once, until the stream is sent. */
    private static void killInTurnWhileTheStreamFlows(IdemCluster cluster, MessageStream stream)
            throws InterruptedException {
        for (int turn = 0; ; turn++) {
            long intervalStart = System.nanoTime();
            cluster.awaitUntil(() -> stream.done().isDone()
                    || System.nanoTime() - intervalStart >= KILL_EVERY.toNanos(), () -> "the next kill",
                    KILL_EVERY.plusMinutes(1));
            if (stream.done().isDone()) {
                return;
            }
            cluster.node(turn % NODES + 1).killAndRestart();
        }
    }

    private String config(EmbeddedKafka kafka, String store, String topic, FaultHistory history, int port) {
        // A short session timeout, so the group notices a killed member quickly.
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: %s
                    group-id-prefix: "fault-%s-"
                    client: { session.timeout.ms: 6000, heartbeat.interval.ms: 1000 }
                """.formatted(kafka.bootstrapServers(), run) + store + """
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
                """.formatted(topic, FaultHandler.class.getName(), history.transactional(),
                history.transactional() ? TRANSACTION_GROUP : 1, CONCURRENCY, MAX_IN_FLIGHT, port);
    }
}
