package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.fault.AckAudit;
import dev.idem.testkit.fault.FaultProxy;
import dev.idem.testkit.fault.FaultProxy.Direction;
import dev.idem.testkit.fault.HandlerRuns;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole pipeline on Redis reached through a {@link FaultProxy}, while the network between them fails mid-stream
 * (docs/design.md, "When the store fails"): the store black-holed (connections open, nothing answered) for longer
 * than the lease, then back; and the store's replies arriving after the lease has run out. One runtime, the
 * in-memory broker, {@value #UNIQUE} IDs and {@value #REPEATS} repeats of them. Each case checks that nothing is
 * lost (every ID ran and is completed), that nothing is acked early (each ack is checked against the store, read
 * directly, when it is given: the key must be completed), and prints a {@code [fault]} line.
 *
 * <p>Re-runs: none. No process dies, and a completion the store could not take is retried with its token until
 * the store answers. An ID sent twice does not run twice either: its second copy, often in a later batch while the
 * first copy's completion still waits for the store (the black hole; or the late replies, where every claim's lease
 * is over when its answer arrives), finds the key held by this process under the same fingerprint and waits for
 * that holder instead of taking the key over (docs/design.md, "Deferral").
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RedisNetworkFaultTest {

    private static final int UNIQUE = 2_000;
    /** Every tenth ID again, 60 messages later: in another batch, often while its original is still held. */
    private static final int REPEATS = UNIQUE / 10;
    private static final int CONCURRENCY = 4;
    private static final String PIPELINE = "orders";

    private final String prefix = "idem-netfault-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    private final HandlerRuns runs = new HandlerRuns();
    private final ConcurrentLinkedQueue<Long> completions = new ConcurrentLinkedQueue<>();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 50);
    private FaultProxy proxy;
    private InspectableDedupStore direct;
    private AckAudit audit;
    private List<String> ids;

    @BeforeEach
    void start() {
        String url = RedisTestServer.url();
        proxy = FaultProxy.forUrl(url);
        RedisDedupStoreProvider provider = new RedisDedupStoreProvider();
        direct = (InspectableDedupStore) provider.create(TestPluginConfig.defaults("store.redis", provider.configSpec())
                .with("uri", url).with("key-prefix", prefix), StoreContext.system());
        audit = new AckAudit(broker, this::completed);
        ids = publish();
    }

    @AfterEach
    void stop() {
        proxy.close();
        direct.close();
        broker.close();
    }

    @Test
    void aBlackHoledRedisMidBatchLosesNothingAcksNothingEarlyAndReRunsNoHandler() {
        Duration lease = Duration.ofSeconds(2);
        Duration hold = Duration.ofSeconds(3);
        IdemRuntime runtime = start(lease, Duration.ofMillis(500));
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> processed() >= 400);
            proxy.blackHole();
            long faultAt = System.nanoTime();
            await().atMost(Duration.ofSeconds(20)).until(() -> !runtime.health().ready());
            long acked = audit.acks();
            assertThat(processed()).as("the black hole struck mid-stream").isLessThan(UNIQUE);
            // Longer than the lease: the claims held run out meanwhile, and nobody else may take them over.
            await().during(hold).atMost(hold.plusSeconds(10)).until(() -> audit.acks() == acked);
            Duration faultLasted = Duration.ofNanos(System.nanoTime() - faultAt);

            proxy.normal();
            long liftedAt = System.nanoTime();
            awaitDrained();
            Duration recovered = Duration.ofNanos(System.nanoTime() - liftedAt);

            assertEveryIdProcessedOnceAndCompleted();
            System.out.printf("[fault] Redis black-holed mid-batch: published %,d (%,d unique, %,d repeats), %,d acked"
                    + " when it struck; black hole %.1f s (lease %d s, command-timeout 500 ms); handed back %,d; lost"
                    + " %d; early acks %d; handler runs %,d (re-runs %d; lease-lost %d); recovered"
                    + " in %.1f s after the fault was lifted (first completion after %d ms)%n",
                    ids.size(), UNIQUE, REPEATS, acked, seconds(faultLasted), lease.toSeconds(), audit.retries(),
                    runs.neverRan(ids).size(), audit.earlyAcks().size(), runs.total(), runs.reruns(),
                    (long) count("lease-lost"), seconds(recovered),
                    firstCompletionAfter(liftedAt));
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    @Test
    void redisRepliesArrivingAfterTheLeaseLoseNothingAcksNothingEarlyAndReRunNoHandler() {
        Duration lease = Duration.ofSeconds(1);
        Duration late = Duration.ofMillis(1_500);
        IdemRuntime runtime = start(lease, Duration.ofSeconds(10));
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> processed() >= 300);
            // Requests reach Redis at once; its answers come back 1.5 s later, after the 1 s lease of a claim ran out.
            proxy.latency(Direction.TO_CLIENT, late);
            long faultAt = System.nanoTime();
            double before = processed();
            await().atMost(Duration.ofSeconds(60)).until(() -> processed() - before >= 150
                    && System.nanoTime() - faultAt >= TimeUnit.SECONDS.toNanos(4));
            Duration faultLasted = Duration.ofNanos(System.nanoTime() - faultAt);
            double during = processed() - before;

            proxy.normal();
            long liftedAt = System.nanoTime();
            awaitDrained();
            Duration recovered = Duration.ofNanos(System.nanoTime() - liftedAt);

            assertEveryIdProcessedOnceAndCompleted();
            System.out.printf("[fault] Redis replies %d ms late (lease %d ms): published %,d (%,d unique, %,d repeats);"
                    + " %,.0f processed in the %.1f s the replies came late; handed back %,d; lost %d; early acks %d;"
                    + " handler runs %,d (re-runs %d; lease-lost %d); drained %.1f s after the fault"
                    + " was lifted%n", late.toMillis(), lease.toMillis(), ids.size(), UNIQUE, REPEATS, during,
                    seconds(faultLasted), audit.retries(),
                    runs.neverRan(ids).size(), audit.earlyAcks().size(), runs.total(), runs.reruns(),
                    (long) count("lease-lost"), seconds(recovered));
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    private IdemRuntime start(Duration lease, Duration commandTimeout) {
        String yaml = """
                broker: { type: memory }
                store:
                  type: redis
                  redis:
                    uri: %s
                    key-prefix: "%s"
                    command-timeout: %dms
                runtime: { http.enabled: false }
                pipelines:
                  %s:
                    source: orders
                    ordering: none
                    concurrency: %d
                    max-in-flight: 200
                    lease: %dms
                """.formatted(proxy.proxiedUrl(RedisTestServer.url()), prefix, commandTimeout.toMillis(), PIPELINE,
                CONCURRENCY, lease.toMillis());
        return Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", audit)
                .meterRegistry(meters)
                .outcomeListener((pipeline, outcome, message, key) -> {
                    if (outcome.equals("processed")) {
                        completions.add(System.nanoTime());
                    }
                })
                .handler(PIPELINE, (message, context) -> {
                    runs.record(message.idempotencyKey().orElseThrow());
                    Thread.sleep(2);
                })
                .start();
    }

    /** {@value #UNIQUE} IDs, every tenth sent again 60 messages after its original. */
    private List<String> publish() {
        List<String> order = new ArrayList<>();
        for (int i = 0; i < UNIQUE; i++) {
            order.add("order-" + i);
            int original = i - 60;
            if (original >= 0 && original % 10 == 0) {
                order.add("order-" + original);
            }
        }
        for (int original = UNIQUE - 60; original < UNIQUE; original++) {
            if (original % 10 == 0) {
                order.add("order-" + original);
            }
        }
        for (String id : order) {
            broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", id),
                    ("payload of " + id).getBytes(StandardCharsets.UTF_8)));
        }
        assertThat(order).hasSize(UNIQUE + REPEATS);
        return order;
    }

    /** Whether the message's key is completed in Redis, read directly (not through the proxy). */
    private boolean completed(InboundMessage message) {
        return direct.inspect(new StoreKey(PIPELINE, message.headers().get("message-id")))
                .map(k -> k.state() == StoredKey.State.COMPLETED).orElse(false);
    }

    private void awaitDrained() {
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
                .until(() -> broker.depth("orders") + broker.unsettled("orders") == 0);
    }

    private void assertEveryIdProcessedOnceAndCompleted() {
        Set<String> unique = Set.copyOf(ids);
        assertThat(runs.neverRan(unique)).as("IDs whose handler never ran").isEmpty();
        assertThat(runs.keys()).containsExactlyInAnyOrderElementsOf(unique);
        assertThat(unique.stream().filter(id -> direct.inspect(new StoreKey(PIPELINE, id))
                .map(k -> k.state() != StoredKey.State.COMPLETED).orElse(true)).toList())
                .as("IDs not completed in the store").isEmpty();
        assertThat(audit.earlyAcks()).as("acks given before the key was completed").isEmpty();
        assertThat(audit.acks()).as("every message acked once").isEqualTo(ids.size());
        assertThat(audit.deadLetters()).isZero();
        assertThat(broker.depth("orders.DLQ")).isZero();
        assertThat(count("processed")).isEqualTo(UNIQUE);
        assertThat(runs.rerunKeys()).as("IDs whose handler ran twice; outcomes %s", outcomes()).isEmpty();
        assertThat(count("lease-lost")).as("completions refused because this process took its own key over").isZero();
    }

    private double processed() {
        return count("processed");
    }

    private double count(String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    private Map<String, Double> outcomes() {
        return meters.find("idem.messages").counters().stream().collect(Collectors.groupingBy(
                c -> c.getId().getTag("outcome"), java.util.TreeMap::new, Collectors.summingDouble(Counter::count)));
    }

    private long firstCompletionAfter(long nanos) {
        return completions.stream().filter(t -> t - nanos >= 0).min(Long::compare)
                .map(t -> TimeUnit.NANOSECONDS.toMillis(t - nanos)).orElse(-1L);
    }

    private static double seconds(Duration d) {
        return d.toMillis() / 1000.0;
    }
}
