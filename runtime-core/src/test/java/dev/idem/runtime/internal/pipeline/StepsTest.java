package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Durable steps ({@code HandlerContext.step}) through the whole pipeline, on the in-memory broker and the Caffeine
 * store: an action runs once per message across in-process retries, a crash and a takeover, a stale owner records
 * nothing, results of any type come back as they were, and what a store without steps or a run without a claim does.
 */
class StepsTest {

    private final PipelineHarness harness = new PipelineHarness();
    /** How often each step's action ran, by message and step. */
    private final Map<String, AtomicInteger> actions = new ConcurrentHashMap<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private int ran(String key) {
        AtomicInteger n = actions.get(key);
        return n == null ? 0 : n.get();
    }

    private String charge(String order) {
        actions.computeIfAbsent(order + "/charge", k -> new AtomicInteger()).incrementAndGet();
        return "ch_" + order;
    }

    /** The recorded result of a step of the payment API's kind. */
    record Charge(String id, long cents, Instant at) {
    }

    @Test
    void stepRunsOnceAcrossInProcessRetriesAndItsResultIsReplayed() {
        List<String> seen = new CopyOnWriteArrayList<>();
        AtomicInteger runs = new AtomicInteger();
        IdemRuntime runtime = harness.start(PipelineHarness.config(""), (message, context) -> {
            String id = context.step("charge", String.class, () -> charge("order-1"));
            seen.add(id);
            if (runs.incrementAndGet() < 3) {
                throw new IllegalStateException("the shipping service timed out (test)");
            }
        });
        harness.publish("order-1", "charge 10");

        await().until(() -> count(runtime, "processed") == 1);
        assertThat(ran("order-1/charge")).as("the action, once").isEqualTo(1);
        assertThat(seen).containsExactly("ch_order-1", "ch_order-1", "ch_order-1");
        assertThat(steps(runtime, "ran")).isEqualTo(1);
        assertThat(steps(runtime, "replayed")).isEqualTo(2);
    }

    @Test
    void stepRecordedBeforeACrashIsReplayedByTheConsumerThatTakesTheKeyOver() throws Exception {
        CountDownLatch stepped = new CountDownLatch(1);
        CountDownLatch dead = new CountDownLatch(1);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        Wrapped dying = new Wrapped(harness.store);
        harness.start(PipelineHarness.config(""), (message, context) -> {
            context.step("charge", String.class, () -> charge("order-1"));
            stepped.countDown();
            dead.await();
            throw new IllegalStateException("killed (test)");
        }, dying.store, new SimpleMeterRegistry());
        harness.publish("order-1", "charge 10");
        assertThat(stepped.await(10, TimeUnit.SECONDS)).isTrue();
        // The process dies after its step: it writes nothing more, the broker hands the message out again, and its
        // claim's lease runs out.
        dying.frozen = true;
        harness.broker.crashConsumers();
        harness.ticker.advance(Duration.ofSeconds(31));

        IdemRuntime survivor = harness.start(PipelineHarness.config(""), (message, context) -> {
            attempts.add(message.attempt());
            assertThat(context.step("charge", String.class, () -> charge("order-1"))).isEqualTo("ch_order-1");
        });
        await().until(() -> count(survivor, "processed") == 1);
        dead.countDown();

        assertThat(attempts).as("a takeover").containsExactly(2);
        assertThat(ran("order-1/charge")).isEqualTo(1);
        assertThat(steps(survivor, "replayed")).isEqualTo(1);
    }

    @Test
    void ownerWhoseKeyWasTakenOverRunsNoStepAndGoesBackForTheNewOwnersOutcome() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        AtomicInteger firstRuns = new AtomicInteger();
        // A consumer that stalls: its lease renewals never reach the store, as when its process is paused.
        Wrapped stalling = new Wrapped(harness.store);
        stalling.renewals = false;
        IdemRuntime stale = harness.start(PipelineHarness.config("handler-timeout: 1h"), (message, context) -> {
            if (firstRuns.incrementAndGet() == 1) {
                started.countDown();
                resume.await();
            }
            context.step("charge", String.class, () -> charge("order-1"));
        }, stalling.store, new SimpleMeterRegistry());
        harness.publish("order-1", "charge 10");
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        // The stale owner stalls past its lease; another consumer takes the key over and completes it.
        harness.ticker.advance(Duration.ofSeconds(31));
        StoreKey key = new StoreKey("orders", "order-1");
        ClaimResult.Acquired owner = (ClaimResult.Acquired) harness.store.claim(List.of(
                new ClaimRequest(key, null, Duration.ofSeconds(30), Duration.ofDays(7)))).get(0);
        assertThat(harness.store.complete(key, owner.token(), Duration.ofDays(7))).isTrue();

        resume.countDown();

        await().until(() -> count(stale, "lease-lost") == 1);
        assertThat(ran("order-1/charge")).as("the stale owner's step never ran").isZero();
        harness.awaitSettled();
        assertThat(count(stale, "duplicate")).as("its redelivery finds the new owner's outcome").isEqualTo(1);
        assertThat(harness.broker.depth(DLQ)).isZero();
    }

    @Test
    void resultsOfEveryKindComeBackAsTheyWereRecorded() {
        Charge charge = new Charge("ch_1", 1250, Instant.parse("2026-01-02T03:04:05.123456Z"));
        byte[] receipt = {0, 1, (byte) 0xFF, 'x'};
        List<Object> first = new CopyOnWriteArrayList<>();
        List<Object> replayed = new CopyOnWriteArrayList<>();
        AtomicInteger runs = new AtomicInteger();
        IdemRuntime runtime = harness.start(PipelineHarness.config(""), (message, context) -> {
            List<Object> into = runs.incrementAndGet() == 1 ? first : replayed;
            into.add(context.step("record", Charge.class, () -> charge));
            into.add(context.step("bytes", byte[].class, () -> receipt));
            into.add(String.valueOf(context.step("null", String.class, () -> null)));
            into.add(context.step("number", Long.class, () -> 42L));
            context.step("void", () -> actions.computeIfAbsent("void", k -> new AtomicInteger()).incrementAndGet());
            if (runs.get() == 1) {
                throw new IllegalStateException("once more (test)");
            }
        });
        harness.publish("order-1", "x");

        await().until(() -> count(runtime, "processed") == 1);
        assertThat(replayed).hasSize(4);
        assertThat(replayed.get(0)).isEqualTo(charge);
        assertThat((byte[]) replayed.get(1)).isEqualTo(receipt);
        assertThat(replayed.subList(2, 4)).containsExactly("null", 42L);
        assertThat(ran("void")).isEqualTo(1);
        assertThat(steps(runtime, "replayed")).isEqualTo(5);
    }

    @Test
    void resultLargerThanTheBoundIsNotRecordedAndDeadLettersTheMessageWithoutRunningItAgain() {
        IdemRuntime runtime = harness.start(PipelineHarness.config("steps:\n  max-size: 16"),
                (message, context) -> context.step("charge", String.class, () -> charge("order-1") + "-".repeat(40)));
        harness.publish("order-1", "x");

        InboundMessage dead = awaitDeadLetter();
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "non-retryable");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).contains("steps.max-size (16)");
        assertThat(ran("order-1/charge")).isEqualTo(1);
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
    }

    @Test
    void storeWithoutStepsFailsTheStepNamingTheStoreBeforeItsActionRuns() {
        DedupStore withoutSteps = new PipelineSemanticsTest.FreezableStore(harness.store);
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("retry:\n  max-attempts: 1"),
                (message, context) -> context.step("charge", String.class, () -> charge("order-1")),
                withoutSteps, new SimpleMeterRegistry());
        harness.publish("order-1", "x");

        InboundMessage dead = awaitDeadLetter();
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL))
                .contains("UnsupportedOperationException").contains("FreezableStore").contains("keeps no steps");
        assertThat(ran("order-1/charge")).isZero();
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
    }

    @Test
    void messageRunWithoutAClaimRunsItsStepsEveryTime() {
        IdemRuntime runtime = harness.start(PipelineHarness.config("missing-id: unprotected"),
                (message, context) -> context.step("charge", String.class, () -> charge("no-key")));
        harness.broker.publish(QUEUE, new OutboundMessage(null, null, Map.of(), "a".getBytes(StandardCharsets.UTF_8)));
        harness.broker.publish(QUEUE, new OutboundMessage(null, null, Map.of(), "a".getBytes(StandardCharsets.UTF_8)));

        await().until(() -> count(runtime, "processed") == 2);
        assertThat(ran("no-key/charge")).isEqualTo(2);
        assertThat(steps(runtime, "ran")).isEqualTo(2);
    }

    @Test
    void eachStepIsAnEventOfTheDeliverysSpanRecordedOrReplayed() {
        InMemorySpanExporter spans = InMemorySpanExporter.create();
        try (OpenTelemetrySdk sdk = OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build()) {
            AtomicInteger runs = new AtomicInteger();
            IdemRuntime runtime = Idem.builder().configYaml(PipelineHarness.config("")).env(Map.of())
                    .broker("memory", harness.broker.connect()).store("caffeine", harness.store)
                    .ticker(harness.ticker).openTelemetry(sdk)
                    .handler("orders", (message, context) -> {
                        context.step("charge", String.class, () -> charge("order-1"));
                        if (runs.incrementAndGet() == 1) {
                            throw new IllegalStateException("once more (test)");
                        }
                    }).start();
            try {
                harness.publish("order-1", "x");
                await().until(() -> !spans.getFinishedSpanItems().isEmpty());

                List<EventData> events = spans.getFinishedSpanItems().get(0).getEvents().stream()
                        .filter(e -> e.getName().equals("idem.step")).toList();
                assertThat(events).extracting(e -> e.getAttributes().get(AttributeKey.stringKey("idem.step.outcome")))
                        .containsExactly("recorded", "replayed");
                assertThat(events).extracting(e -> e.getAttributes().get(AttributeKey.stringKey("idem.step.name")))
                        .containsOnly("charge");
            } finally {
                runtime.stop(Duration.ofSeconds(5));
            }
        }
    }

    /**
     * The harness's store seen by one runtime, as that runtime's process: frozen, its calls fail as if the process
     * were dead; without renewals, its lease renewals answer as done without reaching the store.
     */
    static final class Wrapped {
        final StepStore store;
        volatile boolean frozen;
        volatile boolean renewals = true;

        Wrapped(DedupStore real) {
            this.store = (StepStore) Proxy.newProxyInstance(StepsTest.class.getClassLoader(),
                    new Class<?>[] {StepStore.class}, (proxy, method, args) -> {
                        if (frozen && !method.getName().equals("close")) {
                            throw new StoreException("the process is dead (test)", true);
                        }
                        if (!renewals && method.getName().equals("renew")) {
                            return true;
                        }
                        try {
                            return method.invoke(real, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }
    }

    private InboundMessage awaitDeadLetter() {
        await().atMost(Duration.ofSeconds(20)).until(() -> harness.broker.depth(DLQ) > 0);
        return harness.broker.drain(DLQ).get(0);
    }

    private static double steps(IdemRuntime runtime, String outcome) {
        return runtime.meterRegistry().find(PipelineMetrics.STEPS).tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
