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
 * The dedup store restarted mid-stream: {@code bin/idem run} consumes a Kafka topic with the Redis store on a
 * {@code redis-server} of this test's own ({@link RedisServerProcess}), while {@value #MESSAGES} messages flow in at
 * {@value #RATE} per second. Mid-stream the server is stopped for {@link #DOWN} and started again on the same port
 * and data. While it is down nothing may be acknowledged: after {@link #SETTLE_ACKS} (the commit interval and a
 * margin, for acks of work the store completed before it went down), neither the processed counter nor the group's
 * committed offsets may move. Once it is back, consumption must resume: the figure reported is the time from the
 * server answering again to the first handler run that ended after it (the target is 5 s; the test allows
 * {@link #RESUME_LIMIT}, as a loaded machine may be slower), and in the end no published ID may be lost, with
 * duplicates (plain mode) of at most {@code max-in-flight}. Prints one summary line.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class StoreRestartIT {

    private static final int PARTITIONS = 4;
    private static final int MESSAGES = 8_000;
    private static final int REPEAT_PERCENT = 20;
    private static final int RATE = 400;
    private static final int STOP_AT_PROCESSED = 2_000;
    private static final Duration DOWN = Duration.ofSeconds(7);
    private static final Duration SETTLE_ACKS = Duration.ofSeconds(2);
    private static final Duration RESUME_TARGET = Duration.ofSeconds(5);
    private static final Duration RESUME_LIMIT = Duration.ofSeconds(30);
    private static final int CONCURRENCY = 8;
    private static final int MAX_IN_FLIGHT = 100;
    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void redisStoppedMidStreamAcksNothingWhileDownAndConsumptionResumesWhenItReturns() throws Exception {
        long started = System.nanoTime();
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "fault-store-" + run;
        String group = "fault-" + run + "-orders";
        kafka.createTopic(topic, PARTITIONS);
        FaultHistory history = FaultHistory.plain(dir.resolve("runs"));
        MessageStream stream = MessageStream.plan("store-" + run + "-", MESSAGES, REPEAT_PERCENT, RATE, 11);
        try (RedisServerProcess redis = RedisServerProcess.start(dir.resolve("redis"));
                IdemCluster cluster = new IdemCluster(dir, 1, port -> config(kafka, redis, topic, port),
                        Map.of(FaultHandler.WORK_MS_ENV, "1"))) {
            IdemCluster.Node node = cluster.node(1);
            cluster.startAndAwaitServing(TIMEOUT);
            stream.publishToKafka(kafka.bootstrapServers(), topic);
            cluster.awaitUntil(() -> node.processed() >= STOP_AT_PROCESSED,
                    () -> STOP_AT_PROCESSED + " processed (now " + node.processed() + ")", TIMEOUT);

            long keysBefore = redis.keys();
            redis.stop();
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
            System.out.printf("[fault] store restart, Kafka (4 partitions) + Redis plain (own redis-server, SHUTDOWN"
                    + " SAVE, start): published %,d (%,d unique, %,d repeats) at %d/s; store down %.1fs at %,d"
                    + " processed; acked while down %d; consumption resumed %d ms after the store returned (target"
                    + " %d ms: %s); lost %d; duplicate effects %d (bound %d in flight); handler runs %,d; took %ds%n",
                    stream.messages.size(), tally.unique(), stream.repeats(), RATE, down / 1e9, processedAtStop,
                    ackedWhileDown.size(), resumeMillis, RESUME_TARGET.toMillis(),
                    resumeMillis <= RESUME_TARGET.toMillis() ? "met" : "MISSED", tally.lost().size(),
                    tally.duplicateEffects(), MAX_IN_FLIGHT, tally.runs(), IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(keysBefore).as("keys in the store before the stop").isPositive();
            softly.assertThat(keysAfter).as("keys after the restart (SHUTDOWN SAVE kept them)")
                    .isGreaterThanOrEqualTo(keysBefore);
            softly.assertThat(processedAtStop).as("processed when the store stopped: mid-stream")
                    .isLessThan(stream.uniqueIds.size());
            softly.assertThat(ackedWhileDown).as("acknowledgements while the store was down").isEmpty();
            softly.assertThat(resumeMillis).as("ms from the store's return to the next processed message")
                    .isLessThanOrEqualTo(RESUME_LIMIT.toMillis());
            FaultHistory.assertNoneLostNorUnexpected(softly, tally);
            softly.assertThat(tally.duplicateEffects()).as("duplicate effects, at most max-in-flight for one outage")
                    .isLessThanOrEqualTo(MAX_IN_FLIGHT);
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
