package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Plain mode's batched completions ({@code commit.*}): completions share store calls, each message is
 * acked only on its own key's result, and a key whose write failed or whose lease was lost is the only one
 * that goes back.
 */
class GroupCommitTest {

    private final PipelineHarness harness = new PipelineHarness();
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    private final List<String> order = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private MessageHandler counting() {
        return (message, context) -> {
            String key = message.idempotencyKey().orElseThrow();
            order.add(message.payloadAsString());
            runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        };
    }

    private void publish(String id, String brokerKey, String payload) {
        harness.broker.publish(QUEUE, new OutboundMessage(null, brokerKey, Map.of("message-id", id),
                payload.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void completionsOfConcurrentRunsShareStoreCallsAndEveryMessageIsAckedOnce() {
        RecordingStore store = new RecordingStore(harness.store);
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("""
                concurrency: 8
                max-in-flight: 400
                commit:
                  linger: 5ms
                  batch-size: 64
                """), counting(), store, new SimpleMeterRegistry());
        for (int i = 0; i < 2000; i++) {
            publish("k-" + i, "acc-" + (i % 50), "p-" + i);
        }

        await().until(() -> count(runtime, "processed") == 2000);

        assertThat(runs).hasSize(2000);
        assertThat(runs.values()).allSatisfy(n -> assertThat(n).hasValue(1));
        assertThat(store.singleCompletes).as("no key completed on its own").hasValue(0);
        assertThat(store.batchSizes.stream().mapToInt(Integer::intValue).sum()).isEqualTo(2000);
        assertThat(store.batchSizes).allSatisfy(size -> assertThat(size).isBetween(1, 64));
        assertThat(store.batchSizes.size()).as("fewer calls than keys").isLessThan(2000);
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).isZero();
        for (int a = 0; a < 50; a++) {
            String prefix = "p-";
            int account = a;
            List<Integer> seen = order.stream().map(p -> Integer.parseInt(p.substring(prefix.length())))
                    .filter(i -> i % 50 == account).toList();
            assertThat(seen).as("order of account %d", a).isSorted();
        }
    }

    @Test
    void aKeyWhoseWriteFailedRunsAgainAloneWhileTheRestOfItsBatchIsAcked() {
        RecordingStore store = new RecordingStore(harness.store);
        store.failOnce.add("bad");
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("""
                concurrency: 4
                lease: 2s
                commit:
                  linger: 50ms
                """), counting(), store, new SimpleMeterRegistry());
        for (String id : List.of("a", "b", "bad", "c", "d")) {
            publish(id, id, id);
        }

        await().until(() -> count(runtime, "processed") == 5);

        assertThat(runs.keySet()).containsExactlyInAnyOrder("a", "b", "bad", "c", "d");
        assertThat(runs.values()).as("the failed write was asked again, not the handler").allSatisfy(n ->
                assertThat(n).hasValue(1));
        assertThat(store.failedOnce).containsExactly("bad");
        assertThat(count(runtime, "commit-failed")).isZero();
    }

    @Test
    void aLostLeaseInABatchHandsOnlyThatMessageBackAndTheNextOfItsKeyWaitsForIt() {
        RecordingStore store = new RecordingStore(harness.store);
        store.stealOnce.add("stolen");
        // Queued before the pipeline starts, so that they reach it in one batch: "after" waits behind "stolen" in the
        // pipeline. Published later, "after" may still be in the broker when "stolen" is handed back, and the broker
        // redelivers "stolen" behind it, which is the broker's order to keep, not the pipeline's.
        publish("stolen", "K", "stolen");
        publish("after", "K", "after");
        publish("other", "O", "other");
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("concurrency: 4\nlease: 2s"), counting(), store,
                new SimpleMeterRegistry());

        await().until(() -> count(runtime, "lease-lost") == 1 && count(runtime, "processed") == 1);
        assertThat(runs.get("other")).hasValue(1);
        assertThat(runs).doesNotContainKey("after");
        // The thief never completes; once its lease runs out the copy handed back is taken over and completed.
        await().until(() -> {
            harness.ticker.advance(Duration.ofSeconds(1));
            return count(runtime, "processed") == 3;
        });

        assertThat(order.indexOf("after")).as("the key's next message ran after the lost one")
                .isGreaterThan(order.indexOf("stolen"));
        assertThat(runs.get("stolen")).hasValue(2);
        assertThat(runs.get("after")).hasValue(1);
        assertThat(runs.get("other")).hasValue(1);
    }

    @Test
    void whileOneBatchIsWrittenAFurtherWriterSendsTheNextOnlyOnceItIsFull() throws Exception {
        GatedStore store = new GatedStore(harness.store);
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("""
                concurrency: 8
                commit:
                  linger: 1ms
                  batch-size: 4
                  writers: 2
                """), counting(), store, new SimpleMeterRegistry());
        publish("first", "first", "first");
        await().until(() -> store.calls.get() == 1);

        for (String id : List.of("a", "b", "c")) {
            publish(id, id, id);
        }
        await().until(() -> runs.size() == 4);
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> store.calls.get() == 1);

        publish("d", "d", "d");
        await().until(() -> store.calls.get() == 2);
        assertThat(store.mostAtOnce).as("the full batch went beside the blocked one").hasValue(2);
        assertThat(store.batchSizes).containsExactly(1, 4);
        await().until(() -> count(runtime, "processed") == 4);

        store.open.countDown();
        await().until(() -> count(runtime, "processed") == 5);
        assertThat(runs.values()).allSatisfy(n -> assertThat(n).hasValue(1));
        assertThat(harness.broker.depth(QUEUE) + harness.broker.unsettled(QUEUE)).isZero();
    }

    @Test
    void withOneWriterTheNextBatchWaitsForTheWriteInFlightEvenWhenFull() throws Exception {
        GatedStore store = new GatedStore(harness.store);
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("""
                concurrency: 8
                commit:
                  linger: 1ms
                  batch-size: 4
                  writers: 1
                """), counting(), store, new SimpleMeterRegistry());
        publish("first", "first", "first");
        await().until(() -> store.calls.get() == 1);
        for (int i = 0; i < 8; i++) {
            publish("k-" + i, "k-" + i, "k-" + i);
        }
        await().until(() -> runs.size() == 9);
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> store.calls.get() == 1);
        assertThat(count(runtime, "processed")).isZero();

        store.open.countDown();
        await().until(() -> count(runtime, "processed") == 9);
        assertThat(store.mostAtOnce).hasValue(1);
        assertThat(store.batchSizes).containsExactly(1, 4, 4);
    }

    /** Delegates to a real store; its first {@code completeAll} waits until {@link #open} opens. */
    private static final class GatedStore implements DedupStore {
        final DedupStore delegate;
        final CountDownLatch open = new CountDownLatch(1);
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger writing = new AtomicInteger();
        final AtomicInteger mostAtOnce = new AtomicInteger();
        final List<Integer> batchSizes = new CopyOnWriteArrayList<>();

        GatedStore(DedupStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            return delegate.claim(requests);
        }

        @Override
        public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
            int now = writing.incrementAndGet();
            mostAtOnce.accumulateAndGet(now, Math::max);
            batchSizes.add(requests.size());
            try {
                if (calls.incrementAndGet() == 1) {
                    open.await();
                }
                return delegate.completeAll(requests);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StoreException("interrupted (test)", true);
            } finally {
                writing.decrementAndGet();
            }
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            return delegate.complete(key, token, retention);
        }

        @Override
        public boolean release(StoreKey key, long token) {
            return delegate.release(key, token);
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            return delegate.renew(key, token, lease);
        }

        @Override
        public void close() {
        }
    }

    /** Delegates to a real store; records the batches and can fail or steal chosen keys once. */
    private static final class RecordingStore implements DedupStore {
        final DedupStore delegate;
        final List<Integer> batchSizes = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger singleCompletes = new AtomicInteger();
        final Set<String> failOnce = ConcurrentHashMap.newKeySet();
        final List<String> failedOnce = new CopyOnWriteArrayList<>();
        final Set<String> stealOnce = ConcurrentHashMap.newKeySet();

        RecordingStore(DedupStore delegate) {
            this.delegate = delegate;
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            return delegate.claim(requests);
        }

        @Override
        public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
            batchSizes.add(requests.size());
            List<CompletionResult> results = new ArrayList<>(requests.size());
            for (CompletionRequest r : requests) {
                String id = r.key().id();
                if (failOnce.remove(id)) {
                    failedOnce.add(id);
                    results.add(new CompletionResult.Failed(new StoreException("write lost (test)", true)));
                } else if (stealOnce.remove(id)) {
                    // Another owner took the key over: the claim's token is no longer current.
                    delegate.release(r.key(), r.token());
                    delegate.claim(List.of(new ClaimRequest(new StoreKey(r.key().namespace(), id), null,
                            Duration.ofSeconds(2), Duration.ofDays(1))));
                    results.add(CompletionResult.NOT_OWNER);
                } else {
                    results.add(delegate.completeAll(List.of(r)).get(0));
                }
            }
            return results;
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            singleCompletes.incrementAndGet();
            return delegate.complete(key, token, retention);
        }

        @Override
        public boolean release(StoreKey key, long token) {
            return delegate.release(key, token);
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            return delegate.renew(key, token, lease);
        }

        @Override
        public void close() {
        }
    }
}
