package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The sequence guard's trap, end to end on the in-memory broker: an event dead-lettered as {@code sequence-gap} blocks
 * its aggregate (each later event waits {@code gap-timeout} and follows it), which {@code idem.sequence.blocked} shows
 * until its dead letters, replayed in sequence order, have run; {@code idem.sequence.waiting} and
 * {@code idem.sequence.waiting.aggregates} show the events set aside meanwhile. Plain mode on the Caffeine store, and
 * transactional mode on a store that runs the guard inside its "transaction" as the JDBC store does.
 */
class SequenceBlockedTest {

    private static final String SEQUENCE = """
            sequence:
              aggregate:
                - type: json-pointer
                  pointer: /account
              number:
                - type: header
                  name: event-seq
              gap-timeout: 10s
            """;

    /** What the dead-lettering added, which a replay removes (as {@code idem dlq replay} does). */
    private static final Set<String> DEAD_LETTER_HEADERS = Set.of(DeadLetterReason.HEADER_CAUSE,
            DeadLetterReason.HEADER_DETAIL, DeadLetterReason.HEADER_ATTEMPTS, DeadLetterReason.HEADER_PIPELINE,
            DeadLetterReason.ORIGIN_SOURCE, DeadLetterReason.ORIGIN_PARTITION, DeadLetterReason.ORIGIN_OFFSET,
            DeadLetterReason.ORIGIN_MESSAGE_ID);

    private final PipelineHarness harness = new PipelineHarness();
    /** The sequence numbers the handler ran per account, in run order. */
    private final Map<String, List<Long>> applied = new ConcurrentHashMap<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private MessageHandler recording() {
        return (message, context) -> {
            String body = message.payloadAsString();
            String account = body.substring(body.indexOf(":\"") + 2, body.lastIndexOf('"'));
            applied.computeIfAbsent(account, a -> new CopyOnWriteArrayList<>())
                    .add(Long.parseLong(message.headers().get("event-seq")));
        };
    }

    private void publishEvent(String account, long seq) {
        harness.broker.publish(QUEUE, new OutboundMessage(null, null,
                Map.of("message-id", account + "-" + seq, "event-seq", Long.toString(seq)),
                ("{\"account\":\"" + account + "\"}").getBytes(StandardCharsets.UTF_8)));
    }

    private static double gauge(MeterRegistry meters, String name) {
        Gauge gauge = meters.find(name).tag("pipeline", "orders").gauge();
        return gauge == null ? Double.NaN : gauge.value();
    }

    /** Moves every dead letter back to the source, lowest sequence number first, without the dead-letter headers. */
    private List<String> replayInSequenceOrder() {
        List<InboundMessage> dead = harness.broker.drain(DLQ);
        dead.sort(Comparator.comparingLong(m -> Long.parseLong(m.headers().get("event-seq"))));
        for (InboundMessage m : dead) {
            Map<String, String> headers = new HashMap<>(m.headers());
            headers.keySet().removeAll(DEAD_LETTER_HEADERS);
            harness.broker.publish(QUEUE, new OutboundMessage(null, m.key(), headers, m.payload()));
        }
        return dead.stream().map(m -> m.headers().get("message-id")).toList();
    }

    /**
     * Event 3 of account a comes while 2 is late: it waits, then is dead-lettered; event 4 follows it although 2 has
     * come meanwhile. Replaying the dead letters in order runs 3 and 4, and the aggregate is no longer blocked.
     */
    private void blockThenHeal(IdemRuntime runtime) {
        MeterRegistry meters = runtime.meterRegistry();
        publishEvent("a", 1);
        publishEvent("a", 3);
        publishEvent("b", 1);
        await().until(() -> count(runtime, "processed") == 2 && count(runtime, "gap-waited") == 1);
        await().until(() -> gauge(meters, PipelineMetrics.SEQUENCE_WAITING) == 1);
        assertThat(gauge(meters, PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isEqualTo(1);
        assertThat(gauge(meters, PipelineMetrics.SEQUENCE_BLOCKED)).isZero();

        harness.ticker.advance(Duration.ofSeconds(11));
        await().until(() -> harness.broker.depth(DLQ) == 1);
        await().until(() -> gauge(meters, PipelineMetrics.SEQUENCE_BLOCKED) == 1);
        assertThat(gauge(meters, PipelineMetrics.SEQUENCE_WAITING)).isZero();
        assertThat(gauge(meters, PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isZero();

        // The late event runs when it comes; the next one waits for 3, which is in the dead-letter queue, and follows.
        publishEvent("a", 2);
        await().until(() -> count(runtime, "processed") == 3);
        publishEvent("a", 4);
        await().until(() -> count(runtime, "gap-waited") == 2);
        await().until(() -> gauge(meters, PipelineMetrics.SEQUENCE_WAITING) == 1);
        harness.ticker.advance(Duration.ofSeconds(11));
        await().until(() -> harness.broker.depth(DLQ) == 2);
        assertThat(gauge(meters, PipelineMetrics.SEQUENCE_BLOCKED)).as("still the one aggregate").isEqualTo(1);
        assertThat(applied.get("a")).containsExactly(1L, 2L);

        assertThat(replayInSequenceOrder()).containsExactly("a-3", "a-4");

        await().until(() -> count(runtime, "processed") == 5);
        harness.awaitSettled();
        assertThat(applied.get("a")).containsExactly(1L, 2L, 3L, 4L);
        await().until(() -> gauge(meters, PipelineMetrics.SEQUENCE_BLOCKED) == 0);
        assertThat(gauge(meters, PipelineMetrics.SEQUENCE_WAITING)).isZero();
        assertThat(harness.broker.depth(DLQ)).isZero();

        // Healed: the next event runs at once.
        publishEvent("a", 5);
        await().until(() -> count(runtime, "processed") == 6);
        assertThat(count(runtime, "gap-waited")).isEqualTo(2);
    }

    @Test
    void anAggregateBlockedByAGapDeadLetterIsUnblockedOnceItsDeadLettersAreReplayedInOrder() {
        blockThenHeal(harness.start(config(SEQUENCE), recording()));
    }

    @Test
    void inTransactionalModeTheReplayedDeadLettersCommittingUnblockTheAggregate() {
        IdemRuntime runtime = harness.start(config("transactional: true\n" + SEQUENCE), recording(),
                new TransactionalMemoryStore(harness.store), new SimpleMeterRegistry());

        blockThenHeal(runtime);
    }

    @Test
    void aPipelineWithoutTheSequenceGuardHasNoSequenceMeters() {
        IdemRuntime runtime = harness.start(config(""), (message, context) -> { });
        harness.publish("m-1", "{\"account\":\"a\"}");
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(runtime.meterRegistry().find(PipelineMetrics.IN_FLIGHT).gauge()).isNotNull();
        assertThat(runtime.meterRegistry().getMeters())
                .noneMatch(m -> m.getId().getName().startsWith("idem.sequence."));
    }

    /**
     * Transactional mode without a database: claims in the Caffeine store (as the runtime takes them before the
     * transaction), and {@code runOnce} over maps of its own, one at a time, doing what the JDBC store's transaction
     * does: a completed key is a duplicate, an event at or below the watermark stale, one past the next a gap (nothing
     * written), otherwise the work runs and key and watermark are written together.
     */
    static final class TransactionalMemoryStore implements TransactionalDedupStore, SequencedDedupStore {
        private final DedupStore claims;
        private final Set<StoreKey> completed = ConcurrentHashMap.newKeySet();
        private final Map<StoreKey, Long> watermarks = new ConcurrentHashMap<>();

        TransactionalMemoryStore(DedupStore claims) {
            this.claims = claims;
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            return claims.claim(requests);
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            completed.add(key);
            return claims.complete(key, token, retention);
        }

        @Override
        public boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
            watermarks.merge(advance.aggregate(), advance.number(), Math::max);
            return complete(key, token, retention);
        }

        @Override
        public long watermark(StoreKey aggregate) {
            return watermarks.getOrDefault(aggregate, 0L);
        }

        @Override
        public boolean release(StoreKey key, long token) {
            return claims.release(key, token);
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            return claims.renew(key, token, lease);
        }

        @Override
        public synchronized Outcome runOnce(StoreKey key, String fingerprint, Duration retention, Work work)
                throws Exception {
            return runOnce(key, fingerprint, retention, null, false, work);
        }

        @Override
        public synchronized Outcome runOnce(StoreKey key, String fingerprint, Duration retention,
                SequenceAdvance advance, boolean waitForGaps, Work work) throws Exception {
            if (completed.contains(key)) {
                return Outcome.DUPLICATE;
            }
            if (advance != null) {
                long watermark = watermark(advance.aggregate());
                if (advance.number() <= watermark) {
                    completed.add(key);
                    return Outcome.STALE;
                }
                if (waitForGaps && advance.number() > watermark + 1) {
                    return Outcome.SEQUENCE_GAP;
                }
            }
            work.run(null);
            completed.add(key);
            if (advance != null) {
                watermarks.merge(advance.aggregate(), advance.number(), Math::max);
            }
            return Outcome.COMMITTED;
        }

        @Override
        public void close() {
        }
    }
}
