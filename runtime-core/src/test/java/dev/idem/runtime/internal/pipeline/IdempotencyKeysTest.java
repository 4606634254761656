package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.IdemRuntime;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code HandlerContext.idempotencyKey(scope)}: the key a handler sends with a call to another service that
 * deduplicates by key, the same for every run of one message on any process.
 */
class IdempotencyKeysTest {

    private final PipelineHarness harness = new PipelineHarness();
    private final List<String> keys = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        harness.close();
    }

    /** Pinned: a change would make every re-run after an upgrade call the other service under a new key. */
    @Test
    void theDerivationIsFixed() {
        assertThat(Emissions.callKeyOf("orders", "order-1", "charge")).isEqualTo("fcca58b4-d13d-3fb3-976d-606895366c0f");
    }

    @Test
    void aKeyDependsOnTheNamespaceTheMessagesKeyAndTheScopeAndIsNoEmittedMessagesId() {
        String key = Emissions.callKeyOf("orders", "order-1", "charge");

        assertThat(Emissions.callKeyOf("orders", "order-1", "charge")).isEqualTo(key);
        assertThat(List.of(Emissions.callKeyOf("orders", "order-1", "refund"),
                Emissions.callKeyOf("billing", "order-1", "charge"), Emissions.callKeyOf("orders", "order-2", "charge"),
                Emissions.idOf("orders", "order-1", 0))).doesNotContain(key).doesNotHaveDuplicates();
    }

    @Test
    void everyRunOfAMessageOnAnyProcessGetsTheSameKey() {
        Map<String, Integer> runs = new ConcurrentHashMap<>();
        IdemRuntime first = harness.start(PipelineHarness.config(""), (message, context) -> {
            keys.add(context.idempotencyKey("charge"));
            if (runs.merge("order-1", 1, Integer::sum) == 1) {
                throw new IllegalStateException("the payment service timed out (test)");
            }
        });
        harness.publish("order-1", "charge 10");
        await().until(() -> count(first, "processed") == 1);
        first.stop(Duration.ofSeconds(5));
        // Another process of the service: a runtime of its own over the same store and broker; the key's retention
        // has passed (8 days on the ticker), so the copy published again runs again, there.
        IdemRuntime second = harness.start(PipelineHarness.config(""),
                (message, context) -> keys.add(context.idempotencyKey("charge")));
        harness.ticker.advance(Duration.ofDays(8));
        harness.publish("order-1", "charge 10");
        await().until(() -> count(second, "processed") == 1);

        assertThat(keys).hasSize(3).containsOnly(Emissions.callKeyOf("orders", "order-1", "charge"));
    }

    @Test
    void aMessageWithoutAnIdempotencyKeyCannotDeriveOneAndABlankScopeIsRefused() {
        List<String> problems = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(PipelineHarness.config("missing-id: unprotected"), (message, context) -> {
            for (String scope : new String[] {"charge", " "}) {
                try {
                    context.idempotencyKey(scope);
                } catch (RuntimeException e) {
                    problems.add(e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
        });
        harness.publish(null, "no key");
        await().until(() -> count(runtime, "unprotected") == 1 && problems.size() == 2);

        assertThat(problems.get(0)).startsWith("UnsupportedOperationException: pipeline 'orders' runs this message"
                + " without an idempotency key");
        assertThat(problems.get(1)).startsWith("IllegalArgumentException: idempotencyKey needs a scope");
    }
}
