package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.api.ConcurrentUpdateException;
import dev.idem.api.MessageHandler;
import dev.idem.api.RejectedException;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ConfigException;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The business-level guards end to end on the in-memory broker and the Caffeine store: the sequence guard
 * (stale, next, gaps waited for or accepted, bad numbers), rejected runs, optimistic-conflict re-runs, and
 * emitted messages with deterministic IDs.
 */
class BusinessGuardsTest {

    private static final String SEQUENCE = """
            sequence:
              aggregate:
                - type: json-pointer
                  pointer: /account
              number:
                - type: header
                  name: event-seq
            """;

    private final PipelineHarness harness = new PipelineHarness();
    /** The sequence numbers each account's handler runs saw, in run order. */
    private final Map<String, List<Long>> applied = new ConcurrentHashMap<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private MessageHandler recordingSequence() {
        return (message, context) -> {
            String body = message.payloadAsString();
            String account = body.substring(body.indexOf(":\"") + 2, body.lastIndexOf('"'));
            applied.computeIfAbsent(account, a -> new CopyOnWriteArrayList<>())
                    .add(Long.parseLong(message.headers().get("event-seq")));
        };
    }

    private void publishEvent(String account, long seq) {
        publishEvent(account + "-" + seq, account, Long.toString(seq));
    }

    private void publishEvent(String id, String account, String seq) {
        harness.broker.publish(QUEUE, new OutboundMessage(null, null, Map.of("message-id", id, "event-seq", seq),
                ("{\"account\":\"" + account + "\"}").getBytes(StandardCharsets.UTF_8)));
    }

    private List<InboundMessage> awaitDeadLetters(int expected) {
        List<InboundMessage> dead = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            dead.addAll(harness.broker.drain(DLQ));
            return dead.size() >= expected;
        });
        return dead;
    }

    @Test
    void anAggregateFromAPayloadThatRepeatsItsNameIsAnInvalidSequence() {
        IdemRuntime runtime = harness.start(config(SEQUENCE), recordingSequence());
        harness.broker.publish(QUEUE, new OutboundMessage(null, null, Map.of("message-id", "e-1", "event-seq", "1"),
                "{\"account\":\"a\",\"account\":\"b\"}".getBytes(StandardCharsets.UTF_8)));
        publishEvent("b", 1);

        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry("message-id", "e-1")
                .containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-sequence");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).startsWith("the sequence could not be read:"
                + " Payload repeats the name \"account\" in the payload's top-level object");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(applied).containsOnlyKeys("b");
    }

    @Test
    void shuffledEventsRunInSequenceOncePerAggregateAndStaleOnesAreCountedNotRun() {
        IdemRuntime runtime = harness.start(config("concurrency: 8\n" + SEQUENCE), recordingSequence());
        Random random = new Random(7);
        int accounts = 20;
        int events = 30;
        int published = 0;
        List<String[]> stream = new ArrayList<>();
        for (int a = 0; a < accounts; a++) {
            for (int seq = 1; seq <= events; seq++) {
                stream.add(new String[] {"acct-" + a, Integer.toString(seq)});
            }
        }
        // Shuffled within windows of 5, so every gap closes soon.
        for (int i = 0; i < stream.size(); i += 5) {
            Collections.shuffle(stream.subList(i, Math.min(stream.size(), i + 5)), random);
        }
        for (String[] e : stream) {
            publishEvent(e[0], Long.parseLong(e[1]));
            published++;
            if (random.nextInt(100) < 20) {
                publishEvent(e[0], Long.parseLong(e[1]));
                published++;
            }
        }
        // An old event replayed under a new message ID, after its account finished.
        await().until(() -> count(runtime, "processed") == accounts * events);
        for (int a = 0; a < accounts; a++) {
            publishEvent("replay-" + a, "acct-" + a, "3");
        }
        harness.awaitSettled();
        await().until(() -> count(runtime, "stale") == accounts);

        assertThat(applied).hasSize(accounts);
        List<Long> inOrder = new ArrayList<>();
        for (long seq = 1; seq <= events; seq++) {
            inOrder.add(seq);
        }
        assertThat(applied.values()).allSatisfy(seqs -> assertThat(seqs).isEqualTo(inOrder));
        assertThat(count(runtime, "processed")).isEqualTo(accounts * events);
        assertThat(count(runtime, "duplicate")).isEqualTo(published - accounts * events);
        assertThat(harness.broker.depth(DLQ)).isZero();
    }

    @Test
    void aGapWaitsWithoutHoldingOtherAggregatesAndClosesWhenTheMissingEventComes() {
        IdemRuntime runtime = harness.start(config(SEQUENCE + "  gap-timeout: 1h\n"), recordingSequence());
        publishEvent("a", 1);
        publishEvent("a", 3);
        publishEvent("a", 4);
        publishEvent("b", 1);
        publishEvent("b", 2);
        await().until(() -> count(runtime, "processed") == 3);
        assertThat(applied.get("a")).containsExactly(1L);
        assertThat(applied.get("b")).containsExactly(1L, 2L);

        publishEvent("a", 2);
        await().until(() -> count(runtime, "processed") == 6);
        harness.awaitSettled();
        assertThat(applied.get("a")).containsExactly(1L, 2L, 3L, 4L);
        assertThat(count(runtime, "gap-waited")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void aGapThatOutlivesItsTimeoutIsDeadLetteredNamingTheMissingNumbers() {
        IdemRuntime runtime = harness.start(config(SEQUENCE + "  gap-timeout: 10s\n"), recordingSequence());
        publishEvent("a", 1);
        publishEvent("a", 5);
        await().until(() -> count(runtime, "processed") == 1 && count(runtime, "gap-waited") == 1);
        assertThat(harness.broker.depth(DLQ)).isZero();

        harness.ticker.advance(Duration.ofSeconds(11));
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, Sequences.GAP);
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL))
                .contains("event 5 of aggregate 'a'", "numbers 2 to 4", "sequence.gap-timeout");
        assertThat(applied.get("a")).containsExactly(1L);

        // The watermark is still 1: the next number runs.
        publishEvent("a", 2);
        await().until(() -> count(runtime, "processed") == 2);
        assertThat(applied.get("a")).containsExactly(1L, 2L);
    }

    @Test
    void acceptedGapsRunAtOnceAndTheSkippedNumbersAreStaleWhenTheyCome() {
        IdemRuntime runtime = harness.start(config(SEQUENCE + "  gaps: accept\n"), recordingSequence());
        publishEvent("a", 1);
        publishEvent("a", 4);
        await().until(() -> count(runtime, "processed") == 2);
        publishEvent("a", 2);
        publishEvent("a", 5);
        await().until(() -> count(runtime, "processed") == 3 && count(runtime, "stale") == 1);
        assertThat(applied.get("a")).containsExactly(1L, 4L, 5L);
    }

    @Test
    void aMissingOrMalformedSequenceIsDeadLetteredAsInvalidWithoutRunning() {
        harness.start(config(SEQUENCE), recordingSequence());
        publishEvent("no-number", "a", "");
        publishEvent("negative", "a", "-3");
        publishEvent("zero", "a", "0");
        publishEvent("text", "a", "twelve");
        publishEvent("too-big", "a", "9223372036854775808");
        harness.broker.publish(QUEUE, new OutboundMessage(null, null, Map.of("message-id", "no-account",
                "event-seq", "1"), "{}".getBytes(StandardCharsets.UTF_8)));
        List<InboundMessage> dead = awaitDeadLetters(6);
        assertThat(dead).allSatisfy(m -> assertThat(m.headers())
                .containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, Sequences.INVALID));
        assertThat(applied).isEmpty();
    }

    @Test
    void sequenceNeedsOrderingByKeyAndBothExtractorLists() {
        assertThatThrownBy(() -> harness.start(config("ordering: none\n" + SEQUENCE), recordingSequence()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("pipelines.orders.ordering")
                .hasMessageContaining("must be key");
        assertThatThrownBy(() -> harness.start(config("""
                sequence:
                  aggregate:
                    - type: json-pointer
                      pointer: /account
                """), recordingSequence()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("pipelines.orders.sequence.number");
        assertThatThrownBy(() -> harness.start(config("sequence:\n  gapz: wait\n" + SEQUENCE.substring(10)),
                recordingSequence()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("gapz");
    }

    @Test
    void aRejectedRunIsAckedCountedAndNotRetriedAndItsKeyCompletes() {
        AtomicInteger runs = new AtomicInteger();
        IdemRuntime runtime = harness.start(config(""), (message, context) -> {
            runs.incrementAndGet();
            throw new RejectedException("order 7 is CANCELLED; PAY needs NEW");
        });
        harness.publish("pay-7", "pay");
        await().until(() -> count(runtime, "rejected") == 1);
        harness.publish("pay-7", "pay");
        await().until(() -> count(runtime, "duplicate") == 1);
        harness.awaitSettled();
        assertThat(runs).hasValue(1);
        assertThat(count(runtime, "retried")).isZero();
        assertThat(count(runtime, "processed")).isZero();
        assertThat(harness.broker.depth(DLQ)).isZero();
    }

    @Test
    void anOptimisticConflictRunsAgainAtOnceWithoutUsingRetries() {
        AtomicInteger runs = new AtomicInteger();
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("retry:\n  max-attempts: 1\n  conflict-attempts: 3\n"),
                (message, context) -> {
                    if (runs.incrementAndGet() <= 3) {
                        throw new ConcurrentUpdateException("orders row 7 moved past version " + runs.get());
                    }
                });
        harness.publish("o-7", "update");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(runs).hasValue(4);
        assertThat(count(runtime, "conflict-retried")).isEqualTo(3);
        assertThat(count(runtime, "retried")).isZero();
    }

    @Test
    void conflictsPastTheBoundAreAnOrdinaryFailure() {
        AtomicInteger runs = new AtomicInteger();
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("retry:\n  max-attempts: 2\n  initial-backoff: 0ms\n  max-backoff: 0ms\n  conflict-attempts: 2\n"),
                (message, context) -> {
                    runs.incrementAndGet();
                    throw new ConcurrentUpdateException("always moved");
                });
        harness.publish("o-8", "update");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "handler-failed");
        // Two runs under retry.max-attempts, each followed by two conflict re-runs.
        assertThat(runs).hasValue(6);
        assertThat(count(runtime, "conflict-retried")).isEqualTo(4);
        assertThat(count(runtime, "retried")).isEqualTo(1);
    }

    @Test
    void emittedMessagesArePublishedWithIdsThatARerunRepeats() {
        AtomicInteger runs = new AtomicInteger();
        List<String> returnedIds = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config(""), (message, context) -> {
            returnedIds.add(context.send("payments", "order-1", "charge 10".getBytes(StandardCharsets.UTF_8),
                    Map.of("kind", "payment-requested")));
            returnedIds.add(context.send("audit", "seen".getBytes(StandardCharsets.UTF_8), Map.of()));
            if (runs.incrementAndGet() == 1) {
                throw new IllegalStateException("fails after emitting, before returning");
            }
        });
        harness.publish("order-1", "place");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(runs).hasValue(2);

        List<InboundMessage> payments = harness.broker.drain("payments");
        List<InboundMessage> audit = harness.broker.drain("audit");
        // The failed run's emits were never published; the second run's were, once each.
        assertThat(payments).hasSize(1);
        assertThat(audit).hasSize(1);
        String paymentId = payments.get(0).headers().get("message-id");
        assertThat(paymentId).isEqualTo(Emissions.idOf("orders", "order-1", 0));
        assertThat(payments.get(0).headers()).containsEntry("kind", "payment-requested");
        assertThat(payments.get(0).key()).isEqualTo("order-1");
        assertThat(audit.get(0).headers()).containsEntry("message-id", Emissions.idOf("orders", "order-1", 1));
        // Both runs returned the same IDs, in the same order.
        assertThat(returnedIds).containsExactly(paymentId, audit.get(0).headers().get("message-id"), paymentId,
                audit.get(0).headers().get("message-id"));
        assertThat(runtime.meterRegistry().find(PipelineMetrics.EMITTED).counter().count()).isEqualTo(2);
    }

    @Test
    void emitIdsDependOnNamespaceKeyAndOrdinalOnly() {
        assertThat(Emissions.idOf("orders", "k", 0)).isEqualTo(Emissions.idOf("orders", "k", 0))
                .isNotEqualTo(Emissions.idOf("orders", "k", 1))
                .isNotEqualTo(Emissions.idOf("billing", "k", 0))
                .isNotEqualTo(Emissions.idOf("orders", "k2", 0));
        // The pinned value: a change of the derivation would make re-runs after an upgrade emit new IDs.
        assertThat(Emissions.idOf("orders", "order-1", 0))
                .isEqualTo(UUID.nameUUIDFromBytes("orders\norder-1\n0".getBytes(StandardCharsets.UTF_8))
                        .toString());
    }

    @Test
    void theIdHeaderIsConfigurable() {
        IdemRuntime runtime = harness.start(config("emit:\n  id-header: x-event-id\n"), (message, context) ->
                context.send("out", "x".getBytes(StandardCharsets.UTF_8), Map.of()));
        harness.publish("in-1", "go");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(harness.broker.drain("out").get(0).headers())
                .containsEntry("x-event-id", Emissions.idOf("orders", "in-1", 0))
                .doesNotContainKey("message-id");
    }

    @Test
    void aMessageWithoutKeyCannotEmit() {
        List<Throwable> refused = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config("missing-id: unprotected\n"), (message, context) -> {
            try {
                context.send("out", "x".getBytes(StandardCharsets.UTF_8), Map.of());
            } catch (UnsupportedOperationException e) {
                refused.add(e);
            }
        });
        harness.publish(null, "no key");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(refused).singleElement().satisfies(e -> assertThat(e).hasMessageContaining("idempotency key"));
    }
}
