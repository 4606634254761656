package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.api.BatchContext;
import dev.idem.api.BatchHandler;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.NonRetryableException;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.DistributionSummary;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Batch handlers through the whole pipeline (in-memory broker, Caffeine store): batches of claimed messages with
 * distinct ordering keys, at most {@code batch.size}, each key's messages in order across batches; a batch whose
 * handler throws is split until the failing message is found, which then follows the usual retry and dead-letter
 * rules while the others complete once; failures reported per message; payloads that do not read kept out.
 */
class BatchHandlerTest {

    private static final String BATCH = """
            concurrency: 2
            batch:
              size: 8
              linger: 20ms
            """;

    private final PipelineHarness harness = new PipelineHarness();
    private final List<List<String>> batches = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private static String text(Message m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    private static String id(Message m) {
        return m.idempotencyKey().orElseThrow();
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
    void aBatchHoldsClaimedMessagesOfDistinctKeysInKeyOrderAndNeverADuplicate() {
        Map<String, List<Integer>> seenPerKey = new ConcurrentHashMap<>();
        Set<String> ran = ConcurrentHashMap.newKeySet();
        AtomicInteger reruns = new AtomicInteger();
        BatchHandler handler = (messages, context) -> {
            List<String> batch = new ArrayList<>();
            Set<String> orderingKeys = new java.util.HashSet<>();
            for (Message m : messages) {
                String[] parts = text(m).split(":");
                assertThat(orderingKeys.add(parts[0])).as("one message per ordering key in a batch").isTrue();
                seenPerKey.computeIfAbsent(parts[0], k -> new CopyOnWriteArrayList<>()).add(Integer.parseInt(parts[1]));
                if (!ran.add(id(m))) {
                    reruns.incrementAndGet();
                }
                batch.add(id(m));
            }
            batches.add(batch);
        };
        // 10 customers with 6 events each, all queued before the runtime starts, then every one of them again.
        for (int round = 0; round < 2; round++) {
            for (int n = 1; n <= 6; n++) {
                for (int c = 0; c < 10; c++) {
                    harness.publish("c" + c + "-" + n, "c" + c, "c" + c + ":" + n);
                }
            }
        }
        IdemRuntime runtime = harness.start(config(BATCH), handler);
        await().atMost(Duration.ofSeconds(20)).until(() -> count(runtime, "processed") == 60
                && count(runtime, "duplicate") == 60);
        harness.awaitSettled();

        assertThat(reruns).as("no message ran twice: duplicates never reach a batch").hasValue(0);
        assertThat(batches).allSatisfy(b -> assertThat(b).hasSizeBetween(1, 8));
        assertThat(batches.stream().mapToInt(List::size).max().orElseThrow()).as("batches were gathered").isGreaterThan(1);
        assertThat(seenPerKey).hasSize(10).allSatisfy((key, numbers) ->
                assertThat(numbers).as("key %s in order", key).containsExactly(1, 2, 3, 4, 5, 6));
        DistributionSummary sizes = runtime.meterRegistry().find(PipelineMetrics.BATCH_SIZE).summary();
        assertThat(sizes.count()).isEqualTo(batches.size());
        assertThat((long) sizes.totalAmount()).isEqualTo(60);
    }

    @Test
    void aBatchThatThrowsIsSplitAndOnlyTheFailingMessageIsRetriedAndDeadLettered() {
        Map<String, AtomicInteger> successfulRuns = new ConcurrentHashMap<>();
        AtomicInteger poisonAlone = new AtomicInteger();
        BatchHandler handler = (messages, context) -> {
            for (Message m : messages) {
                if (text(m).equals("poison")) {
                    if (messages.size() == 1) {
                        poisonAlone.incrementAndGet();
                    }
                    throw new IllegalStateException("cannot ship " + id(m));
                }
            }
            messages.forEach(m -> successfulRuns.computeIfAbsent(id(m), k -> new AtomicInteger()).incrementAndGet());
        };
        for (int i = 0; i < 16; i++) {
            harness.publish("m-" + i, "k-" + i, i == 11 ? "poison" : "fine");
        }
        IdemRuntime runtime = harness.start(config("""
                batch:
                  size: 16
                  linger: 50ms
                """), handler);

        InboundMessage dead = awaitDeadLetters(1).get(0);
        await().until(() -> count(runtime, "processed") == 15);
        harness.awaitSettled();

        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "handler-failed")
                .containsEntry("message-id", "m-11");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).contains("cannot ship m-11");
        assertThat(poisonAlone).as("retry.max-attempts runs of the failing message alone").hasValue(3);
        assertThat(successfulRuns).hasSize(15).allSatisfy((id, runs) ->
                assertThat(runs).as("%s completed once", id).hasValue(1));
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
        assertThat(runtime.meterRegistry().find(PipelineMetrics.BATCH_SPLITS).counter().count()).isPositive();
    }

    @Test
    void aFailureReportedForOneMessageFailsOnlyThatMessage() {
        AtomicInteger calls = new AtomicInteger();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        BatchHandler handler = (messages, context) -> {
            calls.incrementAndGet();
            for (Message m : messages) {
                runs.computeIfAbsent(id(m), k -> new AtomicInteger()).incrementAndGet();
                if (text(m).startsWith("bad")) {
                    context.fail(m, new NonRetryableException("address unknown for " + id(m)));
                }
            }
        };
        for (int i = 0; i < 8; i++) {
            harness.publish("m-" + i, "k-" + i, i == 3 ? "bad" : "fine");
        }
        IdemRuntime runtime = harness.start(config("""
                batch:
                  size: 8
                  linger: 50ms
                """), handler);

        InboundMessage dead = awaitDeadLetters(1).get(0);
        await().until(() -> count(runtime, "processed") == 7);
        harness.awaitSettled();

        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "non-retryable")
                .containsEntry("message-id", "m-3");
        assertThat(runs).hasSize(8).allSatisfy((id, n) -> assertThat(n).as(id).hasValue(1));
        assertThat(count(runtime, "failed")).isEqualTo(1);
    }

    @Test
    void aPayloadThatDoesNotReadIsDeadLetteredAndKeptOutOfTheBatch() {
        List<String> handled = new CopyOnWriteArrayList<>();
        BatchHandler handler = (messages, context) -> messages.forEach(m -> handled.add(id(m)));
        harness.publish("m-1", "k-1", "{\"ok\":1}");
        harness.publish("m-2", "k-2", "{\"ok\":");
        harness.publish("m-3", "k-3", "{\"ok\":3}");
        IdemRuntime runtime = harness.start(config("""
                payload: {format: json}
                batch: {size: 8, linger: 50ms}
                """), handler);

        InboundMessage dead = awaitDeadLetters(1).get(0);
        await().until(() -> count(runtime, "processed") == 2);

        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-payload");
        assertThat(handled).containsExactlyInAnyOrder("m-1", "m-3");
    }

    @Test
    void eachMessageHasItsOwnContextInsideTheBatch() {
        Map<String, String> keys = new ConcurrentHashMap<>();
        Map<String, Optional<Object>> transactions = new ConcurrentHashMap<>();
        BatchHandler handler = (messages, context) -> {
            for (Message m : messages) {
                HandlerContext own = context.of(m);
                keys.put(id(m), own.idempotencyKey("charge"));
                transactions.put(id(m), context.transaction(Object.class));
            }
            assertThatThrownBy(() -> context.of(new DeliveredMessageStub()))
                    .isInstanceOf(IllegalArgumentException.class);
        };
        for (int i = 0; i < 4; i++) {
            harness.publish("m-" + i, "k-" + i, "fine");
        }
        IdemRuntime runtime = harness.start(config("batch: {size: 4, linger: 50ms}\n"), handler);
        await().until(() -> count(runtime, "processed") == 4);

        assertThat(keys).hasSize(4);
        assertThat(new java.util.HashSet<>(keys.values())).as("one idempotency key per message").hasSize(4);
        assertThat(transactions.values()).as("plain mode has no transaction").allMatch(Optional::isEmpty);
    }

    @Test
    void aBatchHandlerTakesASingleMessageAsABatchOfOne() throws Exception {
        List<Integer> sizes = new ArrayList<>();
        BatchHandler handler = (messages, context) -> {
            sizes.add(messages.size());
            context.fail(messages.get(0), new IllegalStateException("reported"));
        };
        Message message = new DeliveredMessageStub();
        HandlerContext context = new HandlerContext() {
            @Override
            public String pipeline() {
                return "orders";
            }

            @Override
            public System.Logger logger() {
                return System.getLogger("test");
            }

            @Override
            public java.time.Instant deadline() {
                return java.time.Instant.MAX;
            }

            @Override
            public Duration remaining() {
                return Duration.ofDays(1);
            }

            @Override
            public <T> Optional<T> transaction(Class<T> type) {
                return Optional.empty();
            }
        };

        assertThatThrownBy(() -> handler.handle(message, context)).hasMessage("reported");
        assertThat(sizes).containsExactly(1);
    }

    @Test
    void aBatchHandlerWithTheSequenceGuardIsRefusedAtStart() {
        BatchHandler handler = (messages, context) -> { };
        assertThatThrownBy(() -> harness.start(config("""
                sequence:
                  aggregate: [{type: header, name: aggregate}]
                  number: [{type: header, name: seq}]
                """), handler))
                .hasStackTraceContaining("pipelines.orders.sequence is set, but the handler")
                .hasStackTraceContaining("is a batch handler (BatchHandler)");
    }

    /** A message that belongs to no batch. */
    private static final class DeliveredMessageStub implements Message {
        @Override
        public String brokerMessageId() {
            return "stub";
        }

        @Override
        public Optional<String> idempotencyKey() {
            return Optional.of("stub");
        }

        @Override
        public String key() {
            return null;
        }

        @Override
        public byte[] payload() {
            return new byte[0];
        }

        @Override
        public Map<String, String> headers() {
            return new HashMap<>();
        }

        @Override
        public String source() {
            return "orders";
        }

        @Override
        public String partition() {
            return null;
        }

        @Override
        public int attempt() {
            return 1;
        }

        @Override
        public boolean redelivered() {
            return false;
        }
    }
}
