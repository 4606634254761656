package dev.idem.runtime.internal.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.internal.pipeline.PipelineState.Phase;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.DedupStore;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The shared parts of one pipeline, built as {@link Pipeline}'s constructor builds them, for testing its stages on
 * their own: the configuration read from YAML as the runtime reads it, a {@link ManualTicker}, a real Caffeine store
 * behind a {@link FlakyStore} that fails on demand, the meters, {@link InFlight}, {@link StoreCalls} and
 * {@link Settlement}, and works whose deliveries record how they were settled. The phase starts at
 * {@link Phase#RUNNING}. Close it after each test.
 */
final class StageFixture implements AutoCloseable {

    /** No stage test runs a handler. */
    static final MessageHandler NO_HANDLER = (message, context) -> {
        throw new AssertionError("no handler runs in a stage test");
    };

    final ManualTicker ticker = new ManualTicker();
    /** In order: what the store was asked ({@code release k1}) and how deliveries were settled ({@code ack k1}). */
    final List<String> events = new CopyOnWriteArrayList<>();
    final FlakyStore store;
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final PipelineConfig config;
    final PipelineState state;
    final PipelineMetrics metrics;
    final Outcomes outcomes;
    final InFlight inFlight;
    final StoreCalls storeCalls;
    final Settlement settlement;

    /** Pipeline {@code orders} with the defaults. */
    StageFixture() {
        this("");
    }

    /** Pipeline {@code orders} with {@code settings} (YAML lines under the pipeline). */
    StageFixture(String settings) {
        this.store = new FlakyStore((SequencedDedupStore) new CaffeineDedupStoreProvider().create(
                TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
                new StoreContext(ticker)), events);
        this.config = config(settings, store.real);
        this.state = new PipelineState(config, NO_HANDLER, ticker, MessageTracing.OFF, KeyDigest.NONE);
        state.phase = Phase.RUNNING;
        this.metrics = new PipelineMetrics(meters, config.name());
        this.outcomes = new Outcomes(meters, config.name(), null);
        this.inFlight = new InFlight(config.maxInFlight());
        this.storeCalls = new StoreCalls(state, store, metrics);
        this.settlement = new Settlement(state, inFlight, outcomes, storeCalls);
    }

    /**
     * Pipeline {@code orders} of {@link PipelineHarness#pipeline} with {@code settings}, validated the way the runtime
     * validates its configuration (on the memory broker, never connected, and {@code store}).
     */
    private static PipelineConfig config(String settings, DedupStore store) {
        InMemoryBroker broker = new InMemoryBroker();
        try {
            Idem.Validated validated = Idem.builder()
                    .configYaml(PipelineHarness.pipeline(settings))
                    .env(Map.of())
                    .broker("memory", broker)
                    .store("caffeine", store)
                    .handler("orders", NO_HANDLER)
                    .validate();
            return validated.config().pipelines().get("orders");
        } finally {
            broker.close();
        }
    }

    /** A received message whose key, store key, fingerprint and ordering key are resolved as the intake does. */
    Work work(String key, String payload) {
        return work(key, payload, Map.of());
    }

    Work work(String key, String payload, Map<String, String> headers) {
        byte[] bytes = payload.getBytes(StandardCharsets.UTF_8);
        InboundMessage message = new InboundMessage("orders", null, null, headers, bytes, "broker-" + key, false, 1);
        Work w = new Work(new RecordingDelivery(message, key, events));
        w.key = key;
        w.storeKey = new StoreKey(state.namespace, key);
        w.fingerprint = Fingerprints.sha256(bytes);
        w.orderKey = key;
        return w;
    }

    /** A work admitted under {@code max-in-flight}, as the intake admits it. */
    Work admitted(String key, String payload) throws InterruptedException {
        inFlight.admit(1);
        Work w = work(key, payload);
        w.counted = true;
        return w;
    }

    static RecordingDelivery delivery(Work w) {
        return (RecordingDelivery) w.delivery;
    }

    /** Claims {@code w}'s key in the store (not through any stage) with the pipeline's lease. */
    ClaimResult claimInStore(Work w) {
        return claimInStore(w.storeKey, w.fingerprint);
    }

    /** Another consumer's claim of {@code key}, straight in the store. */
    ClaimResult claimInStore(StoreKey key, String fingerprint) {
        return store.real.claim(List.of(new ClaimRequest(key, fingerprint, config.lease(), config.retention())))
                .get(0);
    }

    /** Claims {@code w}'s key and sets its {@link Claim} as the claim stage does, holding the key in flight. */
    ClaimResult.Acquired acquire(Work w) {
        ClaimResult result = claimInStore(w);
        assertThat(result).as("claim of %s", w.key).isInstanceOf(ClaimResult.Acquired.class);
        ClaimResult.Acquired acquired = (ClaimResult.Acquired) result;
        w.claim.acquired(acquired.token(), acquired.attempt(), ticker.getAsLong());
        inFlight.hold(w);
        return acquired;
    }

    /** Lets {@code w}'s lease run out and has another consumer take its key over. */
    ClaimResult.Acquired takeOver(Work w) {
        ticker.advance(config.lease().plusMillis(1));
        ClaimResult result = claimInStore(w);
        assertThat(result).as("takeover of %s", w.key).isInstanceOf(ClaimResult.Acquired.class);
        return (ClaimResult.Acquired) result;
    }

    /** Has {@code key} completed in the store for {@code payload}, as an earlier delivery would have. */
    void completedEarlier(String key, String payload) {
        Work earlier = work(key, payload);
        ClaimResult.Acquired acquired = (ClaimResult.Acquired) claimInStore(earlier);
        assertThat(store.real.complete(earlier.storeKey, acquired.token(), config.retention())).isTrue();
    }

    /** Raises {@code aggregate}'s watermark to {@code number} by completing an event of it in the store. */
    void watermark(String aggregate, long number) {
        Work event = work(aggregate + "-event-" + number, "e");
        ClaimResult.Acquired acquired = (ClaimResult.Acquired) claimInStore(event);
        assertThat(store.real.completeAndAdvance(event.storeKey, acquired.token(), config.retention(),
                new SequenceAdvance(new StoreKey(state.namespace, aggregate), number, Duration.ofDays(1)))).isTrue();
    }

    /** {@code idem.messages{pipeline=orders, outcome}}; 0 when nothing was counted. */
    double count(String outcome) {
        Counter counter = meters.find(Outcomes.MESSAGES).tag("pipeline", config.name()).tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    @Override
    public void close() {
        store.close();
    }

    /** A delivery that records how it was settled, in {@link #settlements} and in the fixture's events. */
    static class RecordingDelivery implements Delivery {
        private final InboundMessage message;
        private final String name;
        private final List<String> events;
        /** {@code ack}, {@code retryLater(PT5S)}, {@code deadLetter(cause)}, in call order. */
        final List<String> settlements = new CopyOnWriteArrayList<>();
        volatile DeadLetterReason deadLetter;
        /** When (System.nanoTime) it was first settled; 0 until then. */
        volatile long settledAtNanos;

        RecordingDelivery(InboundMessage message, String name, List<String> events) {
            this.message = message;
            this.name = name;
            this.events = events;
        }

        @Override
        public InboundMessage message() {
            return message;
        }

        @Override
        public void ack() {
            settled("ack");
        }

        @Override
        public void retryLater(Duration delay) {
            settled("retryLater(" + delay + ")");
        }

        @Override
        public void deadLetter(DeadLetterReason reason) {
            deadLetter = reason;
            settled("deadLetter(" + reason.cause() + ")");
        }

        private void settled(String how) {
            if (settledAtNanos == 0) {
                settledAtNanos = System.nanoTime();
            }
            settlements.add(how);
            events.add(how.replaceAll("\\(.*", "") + " " + name);
        }

        boolean settled() {
            return !settlements.isEmpty();
        }
    }

    /** A {@link KeyScheduler.Slot} that records what later stages told it. */
    static final class RecordingSlot implements KeyScheduler.Slot {
        final List<String> calls = new CopyOnWriteArrayList<>();

        @Override
        public void detach() {
            calls.add("detach");
        }

        @Override
        public void resume(Step step) {
            calls.add("resume " + step.kind());
        }
    }

    /**
     * The Caffeine store, failing an operation on demand ({@link #fail}): counts the calls per operation and logs each
     * in the fixture's events ({@code release k1}), failed or not.
     */
    static final class FlakyStore implements SequencedDedupStore {
        final SequencedDedupStore real;
        private final List<String> events;
        private final Map<String, AtomicInteger> failuresLeft = new ConcurrentHashMap<>();
        private final Map<String, Boolean> retriable = new ConcurrentHashMap<>();
        private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
        /** The sizes of the {@code completeAll} calls, in order. */
        final List<Integer> completeAllSizes = new CopyOnWriteArrayList<>();

        FlakyStore(SequencedDedupStore real, List<String> events) {
            this.real = real;
            this.events = events;
        }

        /** The next {@code times} calls of {@code operation} fail retriably. */
        void fail(String operation, int times) {
            fail(operation, times, true);
        }

        void fail(String operation, int times, boolean isRetriable) {
            retriable.put(operation, isRetriable);
            failuresLeft.put(operation, new AtomicInteger(times));
        }

        void failAlways(String operation) {
            fail(operation, Integer.MAX_VALUE);
        }

        int calls(String operation) {
            AtomicInteger n = calls.get(operation);
            return n == null ? 0 : n.get();
        }

        private void call(String operation, String what) {
            calls.computeIfAbsent(operation, k -> new AtomicInteger()).incrementAndGet();
            events.add(operation + " " + what);
            AtomicInteger left = failuresLeft.get(operation);
            if (left != null && left.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
                throw new StoreException("the store is down (" + operation + ", test)", retriable.get(operation));
            }
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            call("claim", ids(requests.stream().map(ClaimRequest::key).toList()));
            return real.claim(requests);
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            call("complete", key.id());
            return real.complete(key, token, retention);
        }

        @Override
        public boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
            call("complete", key.id());
            return real.completeAndAdvance(key, token, retention, advance);
        }

        @Override
        public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
            completeAllSizes.add(requests.size());
            call("completeAll", ids(requests.stream().map(CompletionRequest::key).toList()));
            return real.completeAll(requests);
        }

        @Override
        public long watermark(StoreKey aggregate) {
            call("watermark", aggregate.id());
            return real.watermark(aggregate);
        }

        @Override
        public boolean release(StoreKey key, long token) {
            call("release", key.id());
            return real.release(key, token);
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            call("renew", key.id());
            return real.renew(key, token, lease);
        }

        @Override
        public int recordStart(StoreKey key, long token) {
            call("recordStart", key.id());
            return real.recordStart(key, token);
        }

        @Override
        public void close() {
            real.close();
        }

        private static String ids(List<StoreKey> keys) {
            return String.join(",", keys.stream().map(StoreKey::id).toList());
        }
    }
}
