package dev.idem.cli;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.cli.fault.FaultHandler;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.utils.Utils;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fast restarts with Kafka static membership ({@code broker.kafka.group-instance-id}), measured: two
 * {@code bin/idem run} processes in one consumer group on a topic of {@value #PARTITIONS} partitions, while a producer
 * in this JVM publishes at {@value #RATE} messages per second. Once both process, process 1 is killed with
 * {@code kill -9} and restarted at once, as a supervisor would. The scenario runs twice: each process with its own
 * {@code group-instance-id: ${HOSTNAME}}, and without one. The session timeout is {@value #SESSION_TIMEOUT_MS} ms:
 * static membership spares the rebalance only if the restarted process rejoins within it, and a JVM starting on a
 * machine busy with other builds took 12 s to serve; the run without static membership waits about that long.
 *
 * <p>From the handler's runs (time, process, and the message's partition, which follows from its key) the test
 * reports, per scenario: the time from the restart to the restarted process's first processed message (and to its
 * serving {@code /metrics}, which is the process's own start); how long the
 * killed process's partitions went without progress after the kill; the other process's longest pause in that time;
 * and how many rebalances the other process's log shows after the kill. Only robust facts are asserted, never a
 * duration: nothing is lost, the restarted process processes again, and with static membership the other process saw
 * no rebalance and kept processing; without it, it took part in at least one. Prints one summary line.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class KafkaRestartIT {

    private static final int NODES = 2;
    private static final int PARTITIONS = 4;
    private static final int RATE = 200;
    /**
     * A stream of 20 s: the kill comes after about one. The recovery without static membership (about the session
     * timeout) outlasts it; the messages of the killed process's partitions then wait for it.
     */
    private static final int MESSAGES = 20 * RATE;
    private static final int SESSION_TIMEOUT_MS = 30_000;
    private static final int PROCESSED_BEFORE_KILL = 100;
    private static final Duration TIMEOUT = Duration.ofMinutes(1);
    private static final Duration QUIET = Duration.ofSeconds(2);
    /** The adapter's log line for each assignment its group gives it, startup and rebalances alike. */
    private static final Pattern ASSIGNED = Pattern.compile("Pipeline 'orders': group '[^']+' assigned");

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    /** What one scenario measured; durations in milliseconds. */
    private record Figures(long restartToServing, long restartToFirstProcessed, long partitionsIdle,
            long otherLongestPause, int otherRebalances, long otherRunsWhileDown, int lost, int published) {

        String format() {
            return "restart to first processed %.1f s (to serving /metrics %.1f s), the killed process's partitions"
                    .formatted(restartToFirstProcessed / 1000.0, restartToServing / 1000.0)
                    + " idle %.1f s, the other".formatted(partitionsIdle / 1000.0)
                    + " process's longest pause %.1f s and rebalances %d, lost %d of %,d".formatted(
                            otherLongestPause / 1000.0, otherRebalances, lost, published);
        }
    }

    @Test
    void staticMembershipTakesTheKilledProcessesPartitionsBackWithoutRebalancingTheOther() throws Exception {
        long started = System.nanoTime();
        Figures withId = scenario("static", true);
        Figures without = scenario("dynamic", false);
        System.out.printf("[fault] kafka restart, %d processes on %d partitions at %d/s, kill -9 of one and restart"
                + " at once, session.timeout.ms %d: with group-instance-id: %s; without: %s; took %ds%n", NODES,
                PARTITIONS, RATE, SESSION_TIMEOUT_MS, withId.format(), without.format(),
                IdemCluster.secondsSince(started));

        SoftAssertions softly = new SoftAssertions();
        softly.assertThat(withId.lost()).as("lost with group-instance-id").isZero();
        softly.assertThat(without.lost()).as("lost without group-instance-id").isZero();
        softly.assertThat(withId.otherRebalances()).as("rebalances the other process saw, with group-instance-id")
                .isZero();
        softly.assertThat(withId.otherRunsWhileDown()).as("the other process kept processing while process 1 was"
                + " down, with group-instance-id").isPositive();
        softly.assertThat(without.otherRebalances()).as("rebalances the other process saw, without group-instance-id")
                .isPositive();
        softly.assertAll();
    }

    private Figures scenario(String name, boolean staticMembership) throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "fault-restart-" + name + "-" + run;
        kafka.createTopic(topic, PARTITIONS);
        String prefix = "restart-" + name + "-" + run + "-";
        MessageStream stream = MessageStream.plan(prefix, MESSAGES, 0, RATE, 13);
        Path scenarioDir = dir.resolve(name);
        FaultHistory history = FaultHistory.plain(scenarioDir.resolve("runs"));
        try (IdemCluster cluster = new IdemCluster(scenarioDir, NODES,
                port -> config(kafka, topic, name, staticMembership, port), Map.of(FaultHandler.WORK_MS_ENV, "1"))) {
            for (IdemCluster.Node node : cluster.nodes) {
                // What a container or a Kubernetes pod sets: stable across restarts, distinct per process.
                node.idem.env.put("HOSTNAME", "idem-" + name + "-" + node.number);
            }
            cluster.startAndAwaitServing(TIMEOUT);
            stream.publishToKafka(kafka.bootstrapServers(), topic);
            IdemCluster.Node victim = cluster.node(1);
            IdemCluster.Node other = cluster.node(2);
            cluster.awaitUntil(() -> victim.processed() >= PROCESSED_BEFORE_KILL
                    && other.processed() >= PROCESSED_BEFORE_KILL, () -> "both processes to process", TIMEOUT);

            long oldPid = victim.current.process.pid();
            int rebalancesBefore = assignments(other);
            long killedAt = System.currentTimeMillis();
            victim.killAndRestart();
            long restartedAt = System.currentTimeMillis();
            long newPid = victim.current.process.pid();
            cluster.awaitUntil(victim::serving, () -> "the restarted process to serve /metrics", TIMEOUT);
            long servingAfter = System.currentTimeMillis() - restartedAt;
            cluster.awaitUntil(() -> history.runs().stream().anyMatch(r -> r.pid() == newPid),
                    () -> "the restarted process to process a message", TIMEOUT);
            int otherRebalances = assignments(other) - rebalancesBefore;

            stream.done().join();
            cluster.awaitUntil(() -> history.withEffect(stream.uniqueIds) == stream.uniqueIds.size(),
                    () -> "every published ID to have an effect (now " + history.withEffect(stream.uniqueIds) + " of "
                            + stream.uniqueIds.size() + ")", TIMEOUT);
            cluster.awaitQuiet(QUIET, () -> history.runs().size(), TIMEOUT);
            cluster.terminateAll();
            return measure(history.runs(), prefix, oldPid, newPid, other.current.process.pid(), killedAt, restartedAt,
                    servingAfter, otherRebalances, history.tally(stream.uniqueIds));
        } finally {
            kafka.deleteTopic(topic);
        }
    }

    /** The figures of one scenario, from the handler's runs. */
    private static Figures measure(List<FaultHistory.Run> runs, String prefix, long oldPid, long newPid, long otherPid,
            long killedAt, long restartedAt, long servingAfter, int otherRebalances, FaultHistory.Tally tally) {
        List<FaultHistory.Run> sorted = runs.stream().sorted(Comparator.comparingLong(FaultHistory.Run::epochMillis))
                .toList();
        long firstByRestarted = sorted.stream().filter(r -> r.pid() == newPid).findFirst().orElseThrow().epochMillis();

        // The killed process's partitions: those it ran the last message of before the kill. Each is idle until a
        // live process runs one of its messages again.
        Map<Integer, Long> lastPidBeforeKill = new HashMap<>();
        Map<Integer, Long> firstAfterKill = new HashMap<>();
        for (FaultHistory.Run r : sorted) {
            int partition = partition(prefix, r.id());
            if (r.epochMillis() < killedAt) {
                lastPidBeforeKill.put(partition, r.pid());
            } else if (r.pid() != oldPid) {
                firstAfterKill.putIfAbsent(partition, r.epochMillis());
            }
        }
        long resumedAt = killedAt;
        for (Map.Entry<Integer, Long> e : lastPidBeforeKill.entrySet()) {
            if (e.getValue() == oldPid) {
                resumedAt = Math.max(resumedAt, firstAfterKill.getOrDefault(e.getKey(), Long.MAX_VALUE));
            }
        }
        resumedAt = Math.max(resumedAt, firstByRestarted);

        // The other process's longest pause between the kill and the moment everything flowed again.
        long previous = killedAt;
        long longestPause = 0;
        long otherRunsWhileDown = 0;
        for (FaultHistory.Run r : sorted) {
            if (r.pid() != otherPid || r.epochMillis() < killedAt || r.epochMillis() > resumedAt) {
                continue;
            }
            longestPause = Math.max(longestPause, r.epochMillis() - previous);
            previous = r.epochMillis();
            if (r.epochMillis() < firstByRestarted) {
                otherRunsWhileDown++;
            }
        }
        longestPause = Math.max(longestPause, resumedAt - previous);
        return new Figures(servingAfter, firstByRestarted - restartedAt, resumedAt - killedAt, longestPause,
                otherRebalances, otherRunsWhileDown, tally.lost().size(), tally.unique());
    }

    /** The partition the producer's default partitioner chose for the message: MessageStream keys n by order-n. */
    private static int partition(String prefix, String id) {
        byte[] key = ("order-" + id.substring(prefix.length())).getBytes(StandardCharsets.UTF_8);
        return Utils.toPositive(Utils.murmur2(key)) % PARTITIONS;
    }

    /** How many assignments the node's current process logged: one at its start and one per rebalance since. */
    private static int assignments(IdemCluster.Node node) {
        Matcher m = ASSIGNED.matcher(node.current.log());
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    private String config(EmbeddedKafka kafka, String topic, String name, boolean staticMembership, int port) {
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: %s
                    group-id-prefix: "restart-%s-%s-"
                %s    client: { session.timeout.ms: %d, heartbeat.interval.ms: 1000 }
                store:
                  type: caffeine
                pipelines:
                  orders:
                    source: %s
                    handler: %s
                    concurrency: 4
                    max-in-flight: 100
                    lease: 5s
                runtime:
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(kafka.bootstrapServers(), name, run,
                staticMembership ? "    group-instance-id: ${HOSTNAME}\n" : "", SESSION_TIMEOUT_MS, topic,
                FaultHandler.class.getName(), port);
    }
}
