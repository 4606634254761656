package dev.idem.cli;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.cli.fault.FaultHandler;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dedup store gone mid-stream: {@code bin/idem run} consumes a Kafka topic with the Redis store on a
 * {@code redis-server} of this test's own ({@link RedisServerProcess}), while messages flow in at a steady rate
 * ({@link Traffic}). Mid-stream the server goes away for {@link #DOWN}, longer than the 5 s lease: stopped
 * politely ({@code SHUTDOWN SAVE}), or killed ({@code kill -9}) running durably ({@code appendfsync always}); then it
 * starts again on the same port and data. While it is down nothing may be acknowledged: after {@link #SETTLE_ACKS}
 * (the commit interval and a margin, for acks of work the store completed before it went down), neither the processed
 * counter nor the group's committed offsets may move. Once it is back, consumption must resume: the figure reported is
 * the time from the server answering again to the first handler run that ended after it (the target is 5 s; the test
 * allows {@link #RESUME_LIMIT}, as a loaded machine may be slower). In the end no published ID may be lost, and no
 * handler may have run twice: no Idem process is killed here, so every re-run would be the outage's own (completions
 * the store could not take are tried again with their token until it answers). Prints one summary line per case.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class StoreRestartIT {

    private static final int PARTITIONS = 4;
    private static final int REPEAT_PERCENT = 20;
    private static final Duration DOWN = Duration.ofSeconds(7);
    private static final Duration SETTLE_ACKS = Duration.ofSeconds(2);
    private static final Duration RESUME_TARGET = Duration.ofSeconds(5);
    private static final Duration RESUME_LIMIT = Duration.ofSeconds(30);
    private static final int CONCURRENCY = 8;
    private static final int MAX_IN_FLIGHT = 100;
    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    /**
     * One case's traffic. Quick handlers (1 ms) at {@value #FAST_RATE}/s stress resuming; slow ones (250 ms) keep every
     * worker busy when the store goes, so that handlers finish during the outage and their completions must wait for
     * it: the case where completions that gave up after about 6 s used to run handlers again.
     */
    private record Traffic(int messages, int rate, int stopAtProcessed, int workMillis) {
    }

    private static final int FAST_RATE = 400;
    private static final Traffic FAST = new Traffic(8_000, FAST_RATE, 2_000, 1);
    private static final Traffic SLOW = new Traffic(1_200, 30, 300, 250);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void redisStoppedMidStreamAcksNothingWhileDownRunsNoHandlerTwiceAndConsumptionResumes() throws Exception {
        outage(false, FAST);
    }

    /** Regression: Redis killed for 7.4 s with a 5 s lease re-ran 22 handlers, whose completions had given up. */
    @Test
    void redisKilledMidStreamAcksNothingWhileDownRunsNoHandlerTwiceAndConsumptionResumes() throws Exception {
        outage(true, SLOW);
    }

    private void outage(boolean kill, Traffic traffic) throws Exception {
        long started = System.nanoTime();
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "fault-store-" + run;
        String group = "fault-" + run + "-orders";
        kafka.createTopic(topic, PARTITIONS);
        FaultHistory history = FaultHistory.plain(dir.resolve("runs"));
        MessageStream stream = MessageStream.plan("store-" + run + "-", traffic.messages(), REPEAT_PERCENT,
                traffic.rate(), 11);
        try (RedisServerProcess redis = kill ? RedisServerProcess.startDurable(dir.resolve("redis"))
                : RedisServerProcess.start(dir.resolve("redis"));
                IdemCluster cluster = new IdemCluster(dir, 1, port -> config(kafka, redis, topic, port),
                        Map.of(FaultHandler.WORK_MS_ENV, Integer.toString(traffic.workMillis())))) {
            IdemCluster.Node node = cluster.node(1);
            cluster.startAndAwaitServing(TIMEOUT);
            stream.publishToKafka(kafka.bootstrapServers(), topic);
            cluster.awaitUntil(() -> node.processed() >= traffic.stopAtProcessed(),
                    () -> traffic.stopAtProcessed() + " processed (now " + node.processed() + ")", TIMEOUT);

            long keysBefore = redis.keys();
            if (kill) {
                redis.kill();
            } else {
                redis.stop();
            }
            long stoppedAt = System.nanoTime();
            long processedAtStop = node.processed();
            cluster.hold(SETTLE_ACKS, () -> { });
            long processedDown = node.processed();
            long committedDown = committed(kafka, group, topic);
            List<String> ackedWhileDown = new ArrayList<>();
            cluster.hold(DOWN.minus(SETTLE_ACKS), () -> {
                long processed = node.processed();
                long committed = committed(kafka, group, topic);
                if (processed != processedDown || committed != committedDown) {
                    ackedWhileDown.add(String.format("%dms after the stop: processed %d -> %d, committed offsets %d"
                            + " -> %d", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt), processedDown,
                            processed, committedDown, committed));
                }
            });
            long down = System.nanoTime() - stoppedAt;

            redis.start();
            long returnedAt = System.currentTimeMillis();
            long keysAfter = redis.keys();
            cluster.awaitUntil(() -> history.firstRunAtOrAfter(returnedAt).isPresent()
                    && node.processed() > processedDown, () -> "a message processed after the store returned", TIMEOUT);
            OptionalLong firstRun = history.firstRunAtOrAfter(returnedAt);
            long resumeMillis = firstRun.getAsLong() - returnedAt;

            stream.done().join();
            cluster.awaitUntil(() -> history.withEffect(stream.uniqueIds) == stream.uniqueIds.size(),
                    () -> "every published ID to have an effect (now " + history.withEffect(stream.uniqueIds) + " of "
                            + stream.uniqueIds.size() + ")", TIMEOUT);
            cluster.awaitQuiet(Duration.ofSeconds(3), () -> history.runs().size(), TIMEOUT);
            cluster.terminateAll();

            FaultHistory.Tally tally = history.tally(stream.uniqueIds);
            System.out.printf("[fault] store %s, Kafka (4 partitions) + Redis plain (own redis-server%s):"
                    + " published %,d (%,d unique, %,d repeats) at %d/s, handlers of %d ms; store down %.1fs (lease 5s)"
                    + " at %,d processed;"
                    + " acked while down %d; consumption resumed %d ms after the store returned (target %d ms: %s);"
                    + " lost %d; handler re-runs from the outage %d; handler runs %,d; took %ds%n",
                    kill ? "killed (kill -9)" : "restarted (SHUTDOWN SAVE)", kill ? ", appendfsync always" : "",
                    stream.messages.size(), tally.unique(), stream.repeats(), traffic.rate(), traffic.workMillis(),
                    down / 1e9, processedAtStop,
                    ackedWhileDown.size(), resumeMillis, RESUME_TARGET.toMillis(),
                    resumeMillis <= RESUME_TARGET.toMillis() ? "met" : "MISSED", tally.lost().size(),
                    tally.duplicateEffects(), tally.runs(), IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(keysBefore).as("keys in the store before the stop").isPositive();
            softly.assertThat(keysAfter).as("keys after the restart (SHUTDOWN SAVE or the append-only file kept them)")
                    .isGreaterThanOrEqualTo(keysBefore);
            softly.assertThat(processedAtStop).as("processed when the store stopped: mid-stream")
                    .isLessThan(stream.uniqueIds.size());
            softly.assertThat(ackedWhileDown).as("acknowledgements while the store was down").isEmpty();
            softly.assertThat(resumeMillis).as("ms from the store's return to the next processed message")
                    .isLessThanOrEqualTo(RESUME_LIMIT.toMillis());
            FaultHistory.assertNoneLostNorUnexpected(softly, tally);
            softly.assertThat(tally.duplicateEffects()).as("handlers run twice: no process was killed, so the outage's")
                    .isZero();
            softly.assertAll();
        } finally {
            kafka.deleteTopic(topic);
        }
    }

    /** The committed offsets of {@code group} on {@code topic}, summed over the partitions. */
    private static long committed(EmbeddedKafka kafka, String group, String topic) {
        long sum = 0;
        for (int p = 0; p < PARTITIONS; p++) {
            sum += Math.max(0, kafka.committed(group, new TopicPartition(topic, p)));
        }
        return sum;
    }

    private String config(EmbeddedKafka kafka, RedisServerProcess redis, String topic, int port) {
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: %s
                    group-id-prefix: "fault-%s-"
                store:
                  type: redis
                  redis: { uri: "%s", key-prefix: "idem-fault:" }
                pipelines:
                  orders:
                    source: %s
                    handler: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 5s
                    retention: 1h
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(kafka.bootstrapServers(), run, redis.uri(), topic, FaultHandler.class.getName(),
                CONCURRENCY, MAX_IN_FLIGHT, port);
    }
}
