package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ConfigException;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The pipeline's promises, end to end over the in-memory broker and the Caffeine store. */
class PipelineSemanticsTest {

    private final PipelineHarness harness = new PipelineHarness();
    /** Handler runs per idempotency key (or payload, for messages without one). */
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private MessageHandler counting() {
        return (message, context) -> runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
    }

    private static String keyOf(Message message) {
        return message.idempotencyKey().orElse(message.payloadAsString());
    }

    private int runsOf(String key) {
        AtomicInteger n = runs.get(key);
        return n == null ? 0 : n.get();
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
    void duplicatesNeverReachTheHandler() {
        IdemRuntime runtime = harness.start(config("concurrency: 8\nordering: none"), counting());
        Random random = new Random(42);
        int unique = 1_000;
        int published = 0;
        for (int i = 0; i < unique; i++) {
            harness.publish("id-" + i, "payload-" + i);
            published++;
            if (random.nextInt(100) < 20) {
                harness.publish("id-" + i, "payload-" + i);
                published++;
            }
        }
        harness.awaitSettled();
        await().until(() -> count(runtime, "processed") == unique);

        assertThat(runs).hasSize(unique);
        assertThat(runs.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        assertThat(count(runtime, "duplicate")).isEqualTo(published - unique);
        assertThat(count(runtime, "failed")).isZero();
    }

    @Test
    void failingHandlerIsRetriedThenDeadLetteredAndItsKeyReleasedForReplay() {
        AtomicBoolean broken = new AtomicBoolean(true);
        IdemRuntime runtime = harness.start(config(""), (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            if (broken.get()) {
                throw new IllegalStateException("payment service down");
            }
        });
        harness.publish("pay-1", "charge");

        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(runsOf("pay-1")).isEqualTo(3);
        assertThat(dead.headers())
                .containsEntry("message-id", "pay-1")
                .containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "handler-failed")
                .containsEntry(InMemoryBroker.ATTEMPTS, "3");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).contains("payment service down");
        assertThat(count(runtime, "retried")).isEqualTo(2);
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);

        // An operator replays the dead letter once the cause is fixed: it is processed, not a duplicate.
        broken.set(false);
        harness.publish("pay-1", "charge");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(runsOf("pay-1")).isEqualTo(4);
    }

    @Test
    void transientFailureIsRetriedInProcessAndProcessedOnce() {
        AtomicInteger calls = new AtomicInteger();
        IdemRuntime runtime = harness.start(config(""), (message, context) -> {
            if (calls.incrementAndGet() < 3) {
                throw new IOException("timeout talking to the warehouse");
            }
            assertThat(message.attempt()).isEqualTo(3);
        });
        harness.publish("ship-1", "ship");
        await().until(() -> count(runtime, "processed") == 1);
        harness.awaitSettled();
        assertThat(calls).hasValue(3);
        assertThat(count(runtime, "retried")).isEqualTo(2);
        assertThat(harness.broker.depth(DLQ)).isZero();
    }

    @Test
    void nonRetryableFailureIsDeadLetteredWithoutRetry() {
        harness.start(config(""), (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            throw new NonRetryableException("amount is negative");
        });
        harness.publish("bad-1", "{\"amount\":-5}");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(runsOf("bad-1")).isEqualTo(1);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "non-retryable");
    }

    @Test
    void crashBetweenHandlerAndCompleteRerunsTheHandlerAtMostOnceAfterTheLease() throws Exception {
        // The first process: its handler's effect happens, then the process "dies": its store writes
        // fail from then on and the broker drops its connection.
        FreezableStore dyingStore = new FreezableStore(harness.store);
        CountDownLatch effectDone = new CountDownLatch(1);
        CountDownLatch processDead = new CountDownLatch(1);
        harness.start(config(""), (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            effectDone.countDown();
            processDead.await();
        }, dyingStore, new SimpleMeterRegistry());
        harness.publish("order-7", "ship order 7");
        assertThat(effectDone.await(10, TimeUnit.SECONDS)).isTrue();
        dyingStore.freeze();
        harness.broker.crashConsumers();
        processDead.countDown();

        // The second process gets the redelivery: the dead owner's lease still holds, so it defers.
        IdemRuntime survivor = harness.start(config(""), counting());
        await().until(() -> count(survivor, "deferred") >= 1);
        assertThat(runsOf("order-7")).isEqualTo(1);

        harness.ticker.advance(Duration.ofSeconds(31));
        await().until(() -> count(survivor, "processed") == 1);
        harness.awaitSettled();
        assertThat(runsOf("order-7")).as("one run before the crash, one after the lease").isEqualTo(2);

        // Any later copy is a plain duplicate.
        harness.publish("order-7", "ship order 7");
        await().until(() -> count(survivor, "duplicate") == 1);
        assertThat(runsOf("order-7")).isEqualTo(2);
    }

    @Test
    void keyClaimedByAnotherLiveConsumerIsDeferredNeverAckedThenTakenOver() {
        StoreKey key = new StoreKey("orders", "busy-1");
        ClaimResult other = harness.store.claim(
                List.of(new ClaimRequest(key, null, Duration.ofSeconds(30), Duration.ofDays(1)))).get(0);
        assertThat(other).isInstanceOf(ClaimResult.Acquired.class);

        List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
        IdemRuntime runtime = harness.start(config(""), (message, context) -> attempts.add(message.attempt()));
        harness.publish("busy-1", "work");

        await().until(() -> count(runtime, "deferred") >= 1);
        assertThat(attempts).isEmpty();
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).as("not acked").isEqualTo(1);

        harness.ticker.advance(Duration.ofSeconds(31));
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(attempts).containsExactly(2);
        assertThat(harness.store.complete(key, ((ClaimResult.Acquired) other).token(), Duration.ofDays(1)))
                .as("the stale owner is fenced off").isFalse();
    }

    @Test
    void messageThatKeepsKillingItsConsumerIsDeadLetteredWithoutRunning() {
        // Five consumers took the key over, recorded the start of its run, and died in it.
        StoreKey key = new StoreKey("orders", "poison-1");
        ClaimRequest request = new ClaimRequest(key, null, Duration.ofSeconds(30), Duration.ofDays(1));
        for (int i = 0; i < 5; i++) {
            ClaimResult.Acquired acquired = (ClaimResult.Acquired) harness.store.claim(List.of(request)).get(0);
            assertThat(harness.store.recordStart(key, acquired.token())).isEqualTo(i + 1);
            harness.ticker.advance(Duration.ofSeconds(31));
        }
        IdemRuntime runtime = harness.start(config("max-deliveries: 5"), counting());
        harness.publish("poison-1", "crash me");

        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "max-deliveries");
        assertThat(runsOf("poison-1")).isZero();
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
    }

    @Test
    void orderPerKeyHoldsUnderConcurrency16() {
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        IdemRuntime runtime = harness.start(config("ordering: key\nconcurrency: 16"), (message, context) -> {
            String[] parts = message.payloadAsString().split(":");
            seen.computeIfAbsent(parts[0], k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(Integer.parseInt(parts[1]));
            if ((Integer.parseInt(parts[1]) & 7) == 0) {
                Thread.yield();
            }
        });
        int aggregates = 40;
        int perAggregate = 50;
        for (int seq = 0; seq < perAggregate; seq++) {
            for (int a = 0; a < aggregates; a++) {
                harness.publish("evt-" + a + "-" + seq, "agg-" + a, "agg-" + a + ":" + seq);
            }
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> count(runtime, "processed") == aggregates * perAggregate);
        assertThat(seen).hasSize(aggregates);
        assertThat(seen.values()).allSatisfy(seqs -> assertThat(seqs).isSorted().hasSize(perAggregate));
    }

    @Test
    void gracefulStopLosesNothingAndRunsNothingTwice() {
        MessageHandler slow = (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            Thread.sleep(1);
        };
        IdemRuntime first = harness.start(config("concurrency: 4\nordering: none"), slow);
        int total = 2_000;
        for (int i = 0; i < total; i++) {
            harness.publish("m-" + i, "p-" + i);
        }
        await().until(() -> count(first, "processed") >= 200);
        assertThat(first.stop(Duration.ofSeconds(10))).isTrue();
        assertThat(first.inFlight()).isZero();
        assertThat(count(first, "processed")).isLessThan(total);

        IdemRuntime second = harness.start(config("concurrency: 4\nordering: none"), slow);
        harness.awaitSettled();
        await().until(() -> count(first, "processed") + count(second, "processed") == total);
        assertThat(runs).hasSize(total);
        assertThat(runs.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
    }

    @Test
    void stopDeadlineInterruptsReleasesAndHandsBackUnfinishedWork() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        IdemRuntime first = harness.start(config(""), (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            started.countDown();
            new CountDownLatch(1).await(); // blocks until the stop deadline interrupts it
        });
        harness.publish("stuck-1", "slow");
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(first.stop(Duration.ofMillis(200))).isFalse();
        assertThat(count(first, "processed")).isZero();
        assertThat(harness.broker.depth(DLQ)).as("a stop is not a failure").isZero();

        // Released, so the next consumer runs it at once, without waiting for the lease.
        IdemRuntime second = harness.start(config(""), counting());
        await().until(() -> count(second, "processed") == 1);
        assertThat(runsOf("stuck-1")).isEqualTo(2);
    }

    @Test
    void handlerRunningPastItsTimeoutIsInterruptedAndRetried() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch blocked = new CountDownLatch(1);
        IdemRuntime runtime = harness.start(config("handler-timeout: 100ms"), (message, context) -> {
            if (calls.incrementAndGet() == 1) {
                blocked.countDown();
                new CountDownLatch(1).await(); // blocks until the timeout interrupts it
            }
        });
        harness.publish("slow-1", "x");
        assertThat(blocked.await(10, TimeUnit.SECONDS)).isTrue();
        harness.ticker.advance(Duration.ofMillis(101));
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(calls).hasValue(2);
        assertThat(count(runtime, "retried")).isEqualTo(1);
    }

    @Test
    void messageWithoutKeyIsDeadLetteredByDefault() {
        IdemRuntime runtime = harness.start(config(""), counting());
        harness.publish(null, "no id here");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "missing-id");
        assertThat(runs).isEmpty();
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
    }

    @Test
    void messageWithoutKeyIsDeduplicatedByPayloadHashWhenConfigured() {
        IdemRuntime runtime = harness.start(config("missing-id: hash"), counting());
        harness.publish(null, "same body");
        harness.publish(null, "same body");
        harness.publish(null, "other body");
        await().until(() -> count(runtime, "processed") == 2 && count(runtime, "duplicate") == 1);
        assertThat(runs).hasSize(2);
        assertThat(runs.keySet()).allSatisfy(k -> assertThat(k).startsWith("sha256:"));
    }

    @Test
    void messageWithoutKeyRunsUnprotectedWhenConfigured() {
        IdemRuntime runtime = harness.start(config("missing-id: unprotected"), counting());
        harness.publish(null, "same body");
        harness.publish(null, "same body");
        await().until(() -> count(runtime, "processed") == 2);
        assertThat(runsOf("same body")).isEqualTo(2);
        assertThat(count(runtime, "unprotected")).isEqualTo(2);
    }

    @Test
    void keyOver512BytesIsInvalidAndFollowsThePolicy() {
        IdemRuntime runtime = harness.start(config(""), counting());
        harness.publish("é".repeat(257), "too long a key");
        harness.publish("é".repeat(256), "exactly 512 bytes");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-id");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).contains("514 bytes");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(runsOf("é".repeat(256))).isEqualTo(1);
    }

    @Test
    void keyWithALineBreakIsInvalidAndDeadLetteredWithoutRunning() {
        IdemRuntime runtime = harness.start(config(""), counting());
        harness.publish("evil\n12:00:00.000 INFO  [main] d.i.r.IdemRuntime   - FORGED LINE", "x");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-id");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).contains("U+000A");
        assertThat(runs).isEmpty();
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
    }

    @Test
    void aJsonPointerKeyFromAPayloadThatRepeatsItsNameIsInvalidAndDeadLettered() {
        IdemRuntime runtime = harness.start(config("id:\n  - type: json-pointer\n    pointer: /orderId"), counting());
        // A handler reading this with Jackson's defaults sees order B; a reader taking the first sees A.
        harness.publish(null, "{\"orderId\":\"A\",\"amount\":5,\"orderId\":\"B\"}");
        harness.publish(null, "{\"orderId\":\"B\",\"amount\":5}");

        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-id");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).isEqualTo("the idempotency key could not"
                + " be read: Payload repeats the name \"orderId\" in the payload's top-level object, so which value"
                + " is /orderId depends on the JSON reader (Jackson's default takes the last, others the first);"
                + " send each name once in an object");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(runs).containsOnlyKeys("B");
    }

    @Test
    void sameKeyWithOtherPayloadIsDeadLetteredByDefault() {
        IdemRuntime runtime = harness.start(config(""), counting());
        harness.publish("k-1", "amount=10");
        await().until(() -> count(runtime, "processed") == 1);
        harness.publish("k-1", "amount=99");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "fingerprint-mismatch");
        assertThat(count(runtime, "fingerprint-mismatch")).isEqualTo(1);
        assertThat(runsOf("k-1")).isEqualTo(1);
    }

    @Test
    void sameKeyWithOtherPayloadIsSkippedOrProcessedWhenConfigured() {
        IdemRuntime skipping = harness.start(config("fingerprint-mismatch: skip"), counting());
        harness.publish("k-1", "amount=10");
        await().until(() -> count(skipping, "processed") == 1);
        harness.publish("k-1", "amount=99");
        await().until(() -> count(skipping, "duplicate") == 1);
        assertThat(count(skipping, "fingerprint-mismatch")).isEqualTo(1);
        assertThat(runsOf("k-1")).isEqualTo(1);
        skipping.stop(Duration.ofSeconds(5));

        IdemRuntime processing = harness.start(config("fingerprint-mismatch: process"), counting());
        harness.publish("k-1", "amount=99");
        await().until(() -> count(processing, "processed") == 1);
        assertThat(runsOf("k-1")).isEqualTo(2);
    }

    @Test
    void twoPipelinesEachProcessTheSameMessageOnce() {
        AtomicInteger billing = new AtomicInteger();
        AtomicInteger shipping = new AtomicInteger();
        String yaml = """
                broker: { type: memory }
                store: { type: caffeine }
                pipelines:
                  billing: { source: billing-in }
                  shipping: { source: shipping-in }
                """;
        IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", harness.broker.connect()).store("caffeine", harness.store)
                .handler("billing", (m, c) -> billing.incrementAndGet())
                .handler("shipping", (m, c) -> shipping.incrementAndGet())
                .start();
        try {
            for (String queue : List.of("billing-in", "shipping-in")) {
                for (int i = 0; i < 2; i++) {
                    harness.broker.publish(queue, new OutboundMessage(null, null,
                            Map.of("message-id", "order-1"), "o".getBytes()));
                }
            }
            await().until(() -> count(runtime, "duplicate") == 2);
            assertThat(billing).hasValue(1);
            assertThat(shipping).hasValue(1);
        } finally {
            runtime.stop(Duration.ofSeconds(5));
        }
    }

    @Test
    void twoPipelinesOnOneSourceSharingANamespaceRunEachKeyOnce() {
        Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();
        MessageHandler handler = (m, c) ->
                handled.computeIfAbsent(m.idempotencyKey().orElseThrow(), k -> new AtomicInteger()).incrementAndGet();
        String yaml = """
                broker: { type: memory }
                store: { type: caffeine }
                pipelines:
                  billing: { source: orders, namespace: orders }
                  billing-2: { source: orders, namespace: orders }
                """;
        IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", harness.broker.connect()).store("caffeine", harness.store)
                .handler("billing", handler).handler("billing-2", handler)
                .ticker(harness.ticker)
                .start();
        try {
            for (int copy = 0; copy < 2; copy++) {
                for (int i = 0; i < 20; i++) {
                    harness.publish("order-" + i, "o" + i);
                }
            }
            // A copy that reaches one pipeline while the other runs its key is deferred; the deferral
            // re-check runs on the manual ticker, so time moves while we wait.
            await().until(() -> {
                harness.ticker.advance(Duration.ofMillis(50));
                return count(runtime, "processed") == 20 && count(runtime, "duplicate") == 20;
            });
            assertThat(handled).hasSize(20);
            assertThat(handled.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
            assertThat(harness.store.claim(List.of(new ClaimRequest(new StoreKey("orders", "order-3"), null,
                    Duration.ofSeconds(30), Duration.ofDays(1)))).get(0)).isInstanceOf(ClaimResult.Duplicate.class);
        } finally {
            runtime.stop(Duration.ofSeconds(5));
        }
    }

    @Test
    void healthNamesWhatIsDownWithCredentialsMasked() {
        FreezableStore flaky = new FreezableStore(harness.store);
        IdemRuntime runtime = harness.start(config(""), counting(), flaky, new SimpleMeterRegistry());
        assertThat(runtime.health().ready()).isTrue();

        flaky.freeze();
        IdemRuntime.Health health = runtime.health();

        assertThat(health.ready()).isFalse();
        assertThat(health.checks()).containsEntry("store", "down: Cannot reach redis://:******@cache:6379 (test)")
                .containsEntry("broker", "up");
    }

    @Test
    void unavailableStoreAcksNothingAndProcessingResumesWhenItReturns() {
        FreezableStore flaky = new FreezableStore(harness.store);
        flaky.freeze();
        IdemRuntime runtime = harness.start(config("lease: 2s"), counting(), flaky, new SimpleMeterRegistry());
        for (int i = 0; i < 10; i++) {
            harness.publish("s-" + i, "p" + i);
        }
        await().until(() -> runtime.meterRegistry().find(PipelineMetrics.STORE_DURATION).tag("operation", "claim")
                .timer().count() >= 2);
        assertThat(runs).isEmpty();
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).as("nothing acked").isEqualTo(10);

        flaky.thaw();
        // Batches the pipeline gave up on went back with a delay, which runs on the manual ticker.
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            harness.ticker.advance(Duration.ofSeconds(1));
            return count(runtime, "processed") == 10;
        });
        assertThat(runs.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
    }

    /**
     * Regression (a store outage re-ran handlers): a completion the store could not take gave up after about 6 s,
     * and the message ran again once its lease ended. Now the worker keeps trying it, with the same token, while
     * the store is unreachable; nothing else runs on that worker meanwhile, nothing is acked, and once the store
     * is back every message is processed with one run each.
     */
    @Test
    void aCompletionWaitsOutAStoreOutageAndNoHandlerRunsTwice() throws Exception {
        FreezableStore flaky = new FreezableStore(harness.store);
        CountDownLatch firstRunning = new CountDownLatch(1);
        CountDownLatch storeGone = new CountDownLatch(1);
        // Completions written on the worker, which keeps trying m-0's while the store is down.
        IdemRuntime runtime = harness.start(config("concurrency: 1\nordering: none\nlease: 2s\ncommit.batch-size: 1"),
                (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            if (message.idempotencyKey().orElseThrow().equals("m-0")) {
                firstRunning.countDown();
                storeGone.await();
            }
        }, flaky, new SimpleMeterRegistry());
        for (int i = 0; i < 5; i++) {
            harness.publish("m-" + i, "p" + i);
        }
        assertThat(firstRunning.await(10, TimeUnit.SECONDS)).isTrue();
        flaky.freeze();
        storeGone.countDown();

        // m-0 ran and its completion waits; m-1..m-4 are claimed and queued behind the one worker: none may run.
        await().atMost(Duration.ofSeconds(30)).until(() -> flaky.failedCalls() >= 3);
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(10)).until(() -> runs.keySet().size() == 1);
        assertThat(count(runtime, "processed")).isZero();
        assertThat(count(runtime, "commit-failed")).isZero();
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).as("nothing acked").isEqualTo(5);

        flaky.thaw();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            harness.ticker.advance(Duration.ofSeconds(1));
            return count(runtime, "processed") == 5;
        });
        for (int i = 0; i < 5; i++) {
            assertThat(runsOf("m-" + i)).as("runs of m-" + i).isEqualTo(1);
        }
        assertThat(count(runtime, "commit-failed")).isZero();
    }

    @Test
    void batchedCompletionsAckNothingWhileTheStoreIsDownAndEachMessageRunsOnce() throws Exception {
        FreezableStore flaky = new FreezableStore(harness.store);
        CountDownLatch firstRunning = new CountDownLatch(1);
        CountDownLatch storeGone = new CountDownLatch(1);
        IdemRuntime runtime = harness.start(config("concurrency: 1\nordering: none\nlease: 2s\ncommit.linger: 0s"),
                (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            if (message.idempotencyKey().orElseThrow().equals("m-0")) {
                firstRunning.countDown();
                storeGone.await();
            }
        }, flaky, new SimpleMeterRegistry());
        for (int i = 0; i < 5; i++) {
            harness.publish("m-" + i, "p" + i);
        }
        assertThat(firstRunning.await(10, TimeUnit.SECONDS)).isTrue();
        flaky.freeze();
        storeGone.countDown();

        // m-0's completion waits in the committer; a run the worker started before the outage was seen waits too.
        // Once it is seen, no run starts: the claimed messages go back unacked, unrun. Nothing is acked.
        await().atMost(Duration.ofSeconds(30)).until(() -> runs.size() + count(runtime, "store-unavailable") >= 5);
        assertThat(count(runtime, "processed")).isZero();
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).as("nothing acked").isEqualTo(5);

        flaky.thaw();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            harness.ticker.advance(Duration.ofSeconds(1));
            return count(runtime, "processed") == 5;
        });
        assertThat(runs.keySet()).containsExactlyInAnyOrder("m-0", "m-1", "m-2", "m-3", "m-4");
        assertThat(runs.values()).as("runs per message").allSatisfy(n -> assertThat(n).hasValue(1));
        assertThat(count(runtime, "commit-failed")).isZero();
    }

    /**
     * A completion the store answers only after the claim's lease ran out (a slow store, replies arriving late):
     * meanwhile a second copy of the key arrives. The store would grant it the key, the lease being over, and the
     * handler would run twice; the pipeline does not ask, since it holds the key itself: the copy follows its holder
     * and is acked as a duplicate once the holder completes.
     */
    @Test
    void aCopyOfAKeyWhoseCompletionOutlivesTheLeaseFollowsItsHolderAndRunsNothingTwice() throws Exception {
        FreezableStore slow = new FreezableStore(harness.store);
        CountDownLatch completing = slow.holdCompletions();
        IdemRuntime runtime = harness.start(config("concurrency: 2\nordering: none\nlease: 2s\ncommit.batch-size: 1"),
                counting(), slow, new SimpleMeterRegistry());
        harness.publish("m-0", "p0");
        assertThat(completing.await(10, TimeUnit.SECONDS)).as("m-0's completion reached the store").isTrue();
        harness.ticker.advance(Duration.ofSeconds(3));

        harness.publish("m-0", "p0");
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.broker.depth(QUEUE) == 0);
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(10)).until(() -> runsOf("m-0") == 1);
        slow.releaseCompletions();

        await().atMost(Duration.ofSeconds(10)).until(() -> harness.broker.unsettled(QUEUE) == 0);
        assertThat(runsOf("m-0")).isEqualTo(1);
        assertThat(count(runtime, "processed")).isEqualTo(1);
        assertThat(count(runtime, "duplicate")).isEqualTo(1);
        assertThat(count(runtime, "lease-lost")).isZero();
    }

    /**
     * A stop while the store is down: the completion waits until the stop's deadline, then gives up, and the
     * message goes back unacked, never acked without its completion. It runs again once its lease ends: the honest
     * window of a stop during an outage.
     */
    @Test
    void aStopDuringAStoreOutageHandsTheWaitingMessageBackUnackedAndItRunsAgainLater() throws Exception {
        FreezableStore flaky = new FreezableStore(harness.store);
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch storeGone = new CountDownLatch(1);
        IdemRuntime runtime = harness.start(config("concurrency: 1\nlease: 2s\ncommit.batch-size: 1"),
                (message, context) -> {
            runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet();
            running.countDown();
            storeGone.await();
        }, flaky, new SimpleMeterRegistry());
        harness.publish("m-0", "p0");
        assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
        flaky.freeze();
        storeGone.countDown();
        await().atMost(Duration.ofSeconds(30)).until(() -> flaky.failedCalls() >= 2);

        assertThat(runtime.stop(Duration.ofMillis(300))).as("drained in time").isFalse();

        assertThat(count(runtime, "processed")).isZero();
        assertThat(count(runtime, "commit-failed")).isEqualTo(1);
        assertThat(harness.broker.depth(QUEUE)).as("handed back, unacked").isEqualTo(1);
        flaky.thaw();
        IdemRuntime again = harness.start(config("concurrency: 1\nlease: 2s\ncommit.batch-size: 1"),
                (message, context) -> runs.computeIfAbsent(keyOf(message), k -> new AtomicInteger()).incrementAndGet(),
                flaky, new SimpleMeterRegistry());
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            harness.ticker.advance(Duration.ofSeconds(1));
            return count(again, "processed") == 1;
        });
        assertThat(runsOf("m-0")).as("the run whose completion the stop gave up, run again").isEqualTo(2);
    }

    @Test
    void leaseIsRenewedWhileALongHandlerRuns() throws Exception {
        // Real time here: a 1s lease, a handler that runs for 2.5s.
        PipelineHarness realTime = PipelineHarness.realTime();
        DedupStore systemClockStore = new CaffeineDedupStoreProvider().create(
                TestPluginConfig.defaults("store.caffeine",
                        new CaffeineDedupStoreProvider().configSpec()),
                StoreContext.system());
        CountDownLatch running = new CountDownLatch(1);
        try {
            IdemRuntime runtime = realTime.start(config("lease: 1s\nhandler-timeout: 10s"), (message, context) -> {
                running.countDown();
                Thread.sleep(2_500);
            }, systemClockStore, new SimpleMeterRegistry());
            realTime.publish("long-1", "x");
            assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(1_500);
            ClaimResult probe = systemClockStore.claim(List.of(new ClaimRequest(new StoreKey("orders", "long-1"), null,
                    Duration.ofSeconds(1), Duration.ofDays(1)))).get(0);
            assertThat(probe).as("still owned past the original lease").isInstanceOf(ClaimResult.InProgress.class);
            await().until(() -> count(runtime, "processed") == 1);
            assertThat(runtime.meterRegistry().find(PipelineMetrics.STORE_DURATION).tag("operation", "renew")
                    .timer().count()).isGreaterThanOrEqualTo(2);
        } finally {
            realTime.close();
            systemClockStore.close();
        }
    }

    @Test
    void transactionalPipelineOnAStoreWithoutTransactionsIsRefusedAtStart() {
        assertThatThrownBy(() -> harness.start(config("transactional: true"), counting()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("pipelines.orders.transactional")
                .hasMessageContaining("store.type: jdbc");
    }

    /** A store that fails every call while frozen, as one whose server is gone or whose process died. */
    static final class FreezableStore implements DedupStore {
        private final DedupStore delegate;
        private final AtomicInteger failedCalls = new AtomicInteger();
        private final CountDownLatch completionsReleased = new CountDownLatch(1);
        private volatile CountDownLatch completionsHeld;
        private volatile boolean frozen;

        FreezableStore(DedupStore delegate) {
            this.delegate = delegate;
        }

        void freeze() {
            frozen = true;
        }

        void thaw() {
            frozen = false;
        }

        private void check() {
            if (frozen) {
                failedCalls.incrementAndGet();
                throw new StoreException("store unreachable (test)", true);
            }
        }

        /**
         * Holds every completion until {@link #releaseCompletions}, as a store whose replies come late; the latch
         * returned opens when the first one arrives.
         */
        CountDownLatch holdCompletions() {
            completionsHeld = new CountDownLatch(1);
            return completionsHeld;
        }

        void releaseCompletions() {
            completionsReleased.countDown();
        }

        /** Calls refused while frozen. */
        int failedCalls() {
            return failedCalls.get();
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            check();
            return delegate.claim(requests);
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            check();
            CountDownLatch held = completionsHeld;
            if (held != null) {
                held.countDown();
                try {
                    completionsReleased.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new StoreException("interrupted while the test held the completion", true);
                }
            }
            return delegate.complete(key, token, retention);
        }

        @Override
        public boolean release(StoreKey key, long token) {
            check();
            return delegate.release(key, token);
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            check();
            return delegate.renew(key, token, lease);
        }

        @Override
        public void checkHealth() {
            if (frozen) {
                throw new StoreException("Cannot reach redis://:hunter2@cache:6379 (test)", true);
            }
            delegate.checkHealth();
        }

        @Override
        public void close() {
        }
    }
}
