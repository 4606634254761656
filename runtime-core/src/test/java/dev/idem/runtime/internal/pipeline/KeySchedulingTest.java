package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The key scheduler's promises end to end: a waiting key blocks only itself, order holds across
 * retries and deferrals, suspects run alone, followers are counted as themselves, and the ordering
 * key comes from where the configuration says. Time moves on the harness's manual ticker.
 */
class KeySchedulingTest {

    private final PipelineHarness harness = new PipelineHarness();
    /** What ran, in order: "payload" per run. */
    private final List<String> ran = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private static String yaml(String settings) {
        return PipelineHarness.pipeline(settings);
    }

    private void publish(String id, String brokerKey, String payload) {
        harness.broker.publish(QUEUE, new OutboundMessage(null, brokerKey, Map.of("message-id", id),
                payload.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aRetryBackOffParksItsKeyWhileOtherKeysRunOnTheOnlyWorker() {
        AtomicInteger failuresLeft = new AtomicInteger(1);
        IdemRuntime runtime = harness.start(yaml("""
                concurrency: 1
                retry:
                  max-attempts: 3
                  initial-backoff: 10s
                  max-backoff: 10s
                """), (message, context) -> {
            ran.add(message.payloadAsString());
            if (message.payloadAsString().equals("a1") && failuresLeft.getAndDecrement() > 0) {
                throw new IllegalStateException("transient");
            }
        });
        publish("a1", "A", "a1");
        publish("a2", "A", "a2");
        for (int i = 0; i < 20; i++) {
            publish("b" + i, "B" + i, "b" + i);
        }
        await().until(() -> count(runtime, "processed") == 20);
        assertThat(ran).as("a2 waits behind a1's back-off").doesNotContain("a2");

        harness.ticker.advance(Duration.ofSeconds(10));
        await().until(() -> count(runtime, "processed") == 22);
        assertThat(ran.indexOf("a2")).isGreaterThan(ran.lastIndexOf("a1"));
        assertThat(ran.stream().filter("a1"::equals)).hasSize(2);
        assertThat(count(runtime, "retried")).isEqualTo(1);
    }

    @Test
    void aDeferredMessageHoldsBackOnlyItsOwnKeyAndKeepsItsOrder() {
        StoreKey busy = new StoreKey("orders", "busy-1");
        ClaimResult other = harness.store.claim(
                List.of(new ClaimRequest(busy, null, Duration.ofSeconds(30), Duration.ofDays(1)))).get(0);
        assertThat(other).isInstanceOf(ClaimResult.Acquired.class);

        IdemRuntime runtime = harness.start(yaml("concurrency: 4"), (message, context) ->
                ran.add(message.payloadAsString()));
        publish("busy-1", "K", "k1");
        publish("after-1", "K", "k2");
        publish("other-1", "L", "l1");
        await().until(() -> count(runtime, "processed") == 1 && count(runtime, "deferred") >= 1);
        assertThat(ran).containsExactly("l1");

        harness.ticker.advance(Duration.ofSeconds(31));
        await().until(() -> count(runtime, "processed") == 3);
        assertThat(ran).containsExactly("l1", "k1", "k2");
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).isZero();
    }

    @Test
    void suspectsTakenOverAfterALeaseRunAloneAndOthersAreNotBlamed() {
        // A consumer died holding three keys: their leases ran out, so whoever takes them over suspects them.
        List<String> suspects = List.of("s-1", "s-2", "s-3");
        for (String id : suspects) {
            harness.store.claim(List.of(new ClaimRequest(new StoreKey("orders", id), null, Duration.ofSeconds(30),
                    Duration.ofDays(1))));
        }
        harness.ticker.advance(Duration.ofSeconds(31));

        AtomicInteger active = new AtomicInteger();
        List<String> overlapped = Collections.synchronizedList(new ArrayList<>());
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        MessageHandler handler = (message, context) -> {
            String id = message.idempotencyKey().orElseThrow();
            int now = active.incrementAndGet();
            try {
                attempts.put(id, message.attempt());
                if (id.startsWith("s-") && now > 1) {
                    overlapped.add(id);
                }
                Thread.sleep(2);
                if (id.startsWith("s-") && active.get() > 1) {
                    overlapped.add(id);
                }
            } finally {
                active.decrementAndGet();
            }
        };
        IdemRuntime runtime = harness.start(yaml("concurrency: 8\nordering: none"), handler);
        for (int i = 0; i < 40; i++) {
            publish("n-" + i, null, "n" + i);
            if (i % 13 == 0) {
                publish(suspects.get(i / 13 % 3), null, "s");
            }
        }
        await().until(() -> count(runtime, "processed") == 43);
        assertThat(overlapped).as("a suspect never ran beside another message").isEmpty();
        assertThat(suspects).allSatisfy(id -> assertThat(attempts.get(id)).isEqualTo(2));
        assertThat(attempts.get("n-5")).isEqualTo(1);
        assertThat(count(runtime, "dead-lettered")).isZero();
    }

    @Test
    void aFollowerIsReportedAsItselfNotAsTheCopyItFollowed() {
        List<String> duplicates = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = Idem.builder()
                .configYaml(yaml("concurrency: 2"))
                .env(Map.of())
                .broker("memory", harness.broker.connect())
                .store("caffeine", harness.store)
                .handler("orders", (message, context) -> ran.add(message.payloadAsString()))
                .meterRegistry(new SimpleMeterRegistry())
                .outcomeListener((pipeline, outcome, message, key) -> {
                    if (outcome.equals("duplicate")) {
                        duplicates.add(message.brokerMessageId());
                    }
                })
                .ticker(harness.ticker)
                .start();
        try {
            publish("same", null, "x");
            publish("same", null, "x");
            publish("same", null, "x");
            await().until(() -> count(runtime, "processed") + count(runtime, "duplicate") == 3);
            assertThat(ran).containsExactly("x");
            assertThat(duplicates).hasSize(2).doesNotHaveDuplicates();
        } finally {
            runtime.stop(Duration.ofSeconds(5));
        }
    }

    @Test
    void theOrderingKeyComesFromItsOwnExtractorsWhenConfigured() {
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        IdemRuntime runtime = harness.start(yaml("""
                concurrency: 16
                ordering-key:
                  - type: json-pointer
                    pointer: /account
                """), (message, context) -> {
            String[] parts = message.payloadAsString().replaceAll("[{}\"]", "").split(",");
            String account = parts[0].split(":")[1];
            int seq = Integer.parseInt(parts[1].split(":")[1]);
            seen.computeIfAbsent(account, k -> Collections.synchronizedList(new ArrayList<>())).add(seq);
            if ((seq & 3) == 0) {
                Thread.yield();
            }
        });
        int accounts = 30;
        int perAccount = 40;
        for (int seq = 0; seq < perAccount; seq++) {
            for (int a = 0; a < accounts; a++) {
                // No broker key: without ordering-key, each message would be ordered by its own ID alone.
                publish("e-" + a + "-" + seq, null, "{\"account\":\"acc" + a + "\",\"seq\":" + seq + "}");
            }
        }
        await().until(() -> count(runtime, "processed") == accounts * perAccount);
        assertThat(seen).hasSize(accounts);
        assertThat(seen.values()).allSatisfy(seqs -> assertThat(seqs).isSorted().hasSize(perAccount));
    }

    @Test
    void aHandlerThatOverflowsItsStackIsDeadLetteredAndItsWorkerGoesOn() {
        IdemRuntime runtime = harness.start(yaml("""
                concurrency: 1
                retry:
                  max-attempts: 2
                  initial-backoff: 0ms
                  max-backoff: 0ms
                """), (message, context) -> {
            ran.add(message.payloadAsString());
            if (message.payloadAsString().equals("deep")) {
                throw new StackOverflowError("recursed too deep (test)");
            }
        });
        publish("deep-1", null, "deep");
        publish("after-1", null, "after");
        await().until(() -> count(runtime, "dead-lettered") == 1 && count(runtime, "processed") == 1);
        assertThat(ran).containsExactlyInAnyOrder("deep", "deep", "after");
        assertThat(harness.broker.drain(PipelineHarness.DLQ)).singleElement().satisfies(dead ->
                assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "handler-failed"));
    }

    @Test
    void aStopHandsAParkedRetryBackReleasedAndLosesNothing() {
        IdemRuntime first = harness.start(yaml("""
                retry:
                  max-attempts: 5
                  initial-backoff: 1h
                  max-backoff: 1h
                """), (message, context) -> {
            ran.add(message.payloadAsString());
            throw new IllegalStateException("fails until the next process");
        });
        publish("p-1", "K", "p1");
        publish("p-2", "K", "p2");
        await().until(() -> count(first, "retried") == 1);
        assertThat(first.stop(Duration.ofMillis(200))).isFalse();
        assertThat(harness.broker.depth(PipelineHarness.DLQ)).isZero();

        // Released on the way out, so the next process takes both at once, in order.
        IdemRuntime second = harness.start(yaml(""), (message, context) -> ran.add(message.payloadAsString()));
        await().until(() -> count(second, "processed") == 2);
        assertThat(ran).containsExactly("p1", "p1", "p2");
    }
}
