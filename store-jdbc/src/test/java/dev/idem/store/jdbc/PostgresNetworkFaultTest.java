package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import dev.idem.testkit.fault.AckAudit;
import dev.idem.testkit.fault.FaultProxy;
import dev.idem.testkit.fault.FaultProxy.Direction;
import dev.idem.testkit.fault.HandlerRuns;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole pipeline on PostgreSQL reached through a {@link FaultProxy}, while the network between them fails
 * mid-stream (docs/design.md, "When the store fails"): the database black-holed (connections open, nothing
 * answered, new connections accepted and never logged in) for longer than the lease, then back, in plain and in
 * transactional mode; and the database's replies arriving after the lease has run out. One runtime, the in-memory
 * broker, {@value #UNIQUE} IDs and {@value #REPEATS} repeats of them. Each case checks that nothing is lost, that
 * nothing is acked early (each ack is checked, when it is given, against the store read on a connection of the
 * test's own: the key must be completed), and prints a {@code [fault]} line.
 *
 * <p>Re-runs in plain mode: none. A completion the database could not take is retried with its token until it
 * answers, and a repeated ID's second copy finds the key held by this process and follows that holder instead of
 * taking the key over once its lease ran out (docs/design.md, "Deferral"). In transactional mode a run whose transaction the fault broke rolled back, so the handler runs again
 * by design; the effect (one business row per ID, in the transaction) must be there exactly once. A run whose
 * {@code COMMIT} the black hole held commits when the fault is lifted, after its client gave up on the connection
 * (as TCP delivers what was sent before a partition once it heals): its retry then finds the key completed and the
 * message is acked as a duplicate, so such an ID counts {@code duplicate}, not {@code processed}.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class PostgresNetworkFaultTest {

    private static final int UNIQUE = 1_500;
    /** Every tenth ID again, 60 messages later. */
    private static final int REPEATS = UNIQUE / 10;
    private static final String PIPELINE = "orders";

    private final HandlerRuns runs = new HandlerRuns();
    private final ConcurrentLinkedQueue<Long> completions = new ConcurrentLinkedQueue<>();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 50);
    private TestDatabase db;
    private FaultProxy proxy;
    private JdbcDedupStore direct;
    private AckAudit audit;
    private List<String> ids;

    @BeforeEach
    void start() {
        db = TestDatabase.postgres();
        proxy = FaultProxy.forUrl(db.url);
        direct = AbstractJdbcDedupStoreTest.create(db.config());
        audit = new AckAudit(broker, this::completed);
        ids = publish();
    }

    @AfterEach
    void stop() {
        proxy.close();
        direct.close();
        broker.close();
        db.dropTables();
    }

    @Test
    void aBlackHoledPostgresMidBatchLosesNothingAcksNothingEarlyAndReRunsNothing() {
        IdemRuntime runtime = start(false, null);
        try {
            BlackHole hole = blackHoleMidStream(runtime);
            assertNothingLostNorAckedEarly();
            assertThat(count("processed")).isEqualTo(UNIQUE);
            assertNoReRuns();
            System.out.printf("[fault] PostgreSQL black-holed mid-batch, plain mode: %s; handler runs %,d (re-runs %d,"
                    + " lease-lost %d)%n", hole.describe(), runs.total(), runs.reruns(),
                    (long) count("lease-lost"));
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    @Test
    void aBlackHoledPostgresMidBatchInTransactionalModeLeavesEveryEffectExactlyOnce() {
        String business = db.newTable("business");
        db.jdbi().useHandle(h -> h.execute("CREATE TABLE " + business + " (order_id VARCHAR(64) NOT NULL)"));
        IdemRuntime runtime = start(true, business);
        try {
            BlackHole hole = blackHoleMidStream(runtime);
            assertNothingLostNorAckedEarly();
            List<String> notOnce = db.jdbi().withHandle(h -> h.createQuery("SELECT order_id FROM " + business
                    + " GROUP BY order_id HAVING COUNT(*) <> 1").mapTo(String.class).list());
            int effects = db.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM " + business)
                    .mapTo(Integer.class).one());
            assertThat(notOnce).as("IDs with other than one business row").isEmpty();
            assertThat(effects).as("business rows").isEqualTo(UNIQUE);
            System.out.printf("[fault] PostgreSQL black-holed mid-batch, transactional mode: %s; effects %,d (duplicate"
                    + " effects %d); handler runs %,d (re-runs %d, rolled back with their transaction; retried %d);"
                    + " committed by a COMMIT the black hole held, then found a duplicate: %d%n", hole.describe(),
                    effects, notOnce.size(), runs.total(), runs.reruns(), (long) count("retried"),
                    UNIQUE - (long) count("processed"));
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    @Test
    void postgresRepliesArrivingAfterTheLeaseLoseNothingAcksNothingEarlyAndReRunNothing() {
        IdemRuntime runtime = start(false, null, Duration.ofSeconds(1), Duration.ofSeconds(10));
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> processed() >= 300);
            Duration late = Duration.ofMillis(1_500);
            proxy.latency(Direction.TO_CLIENT, late);
            long faultAt = System.nanoTime();
            double before = processed();
            await().atMost(Duration.ofSeconds(60)).until(() -> processed() - before >= 100
                    && System.nanoTime() - faultAt >= TimeUnit.SECONDS.toNanos(4));
            Duration lasted = Duration.ofNanos(System.nanoTime() - faultAt);
            double during = processed() - before;
            proxy.normal();
            long liftedAt = System.nanoTime();
            awaitDrained();
            Duration recovered = Duration.ofNanos(System.nanoTime() - liftedAt);

            assertNothingLostNorAckedEarly();
            assertThat(count("processed")).isEqualTo(UNIQUE);
            assertNoReRuns();
            System.out.printf("[fault] PostgreSQL replies %d ms late (lease 1000 ms): published %,d (%,d unique, %,d"
                    + " repeats); %,.0f processed in the %.1f s the replies came late; handed back %,d; lost %d; early"
                    + " acks %d; handler runs %,d (re-runs %d; lease-lost %d); drained %.1f s after"
                    + " the fault was lifted%n", late.toMillis(), ids.size(), UNIQUE, REPEATS, during, seconds(lasted),
                    audit.retries(), runs.neverRan(ids).size(), audit.earlyAcks().size(), runs.total(), runs.reruns(),
                    (long) count("lease-lost"), seconds(recovered));
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    /** What a black hole did: its figures, for the {@code [fault]} line. */
    private record BlackHole(String describe) {
    }

    /**
     * Black-holes the database once 400 messages are processed, until the runtime reports it down and then for 3 s
     * more (longer than the 2 s lease) with no ack meanwhile; lifts it and waits until everything is settled.
     */
    private BlackHole blackHoleMidStream(IdemRuntime runtime) {
        Duration hold = Duration.ofSeconds(3);
        await().atMost(Duration.ofSeconds(60)).until(() -> processed() >= 400);
        proxy.blackHole();
        long faultAt = System.nanoTime();
        await().atMost(Duration.ofSeconds(30)).until(() -> !runtime.health().ready());
        long acked = audit.acks();
        assertThat(processed()).as("the black hole struck mid-stream").isLessThan(UNIQUE);
        await().during(hold).atMost(hold.plusSeconds(10)).until(() -> audit.acks() == acked);
        Duration lasted = Duration.ofNanos(System.nanoTime() - faultAt);
        int held = proxy.openConnections();

        proxy.normal();
        long liftedAt = System.nanoTime();
        awaitDrained();
        Duration recovered = Duration.ofNanos(System.nanoTime() - liftedAt);
        return new BlackHole(String.format("published %,d (%,d unique, %,d repeats), %,d acked when it struck; black"
                + " hole %.1f s (lease 2 s, socket-timeout 1 s; %d connection(s) open through it at the end); handed"
                + " back %,d; lost %d; early acks %d; recovered in %.1f s after the fault was lifted (first completion"
                + " after %d ms)", ids.size(), UNIQUE, REPEATS, acked, seconds(lasted), held, audit.retries(),
                runs.neverRan(ids).size(), audit.earlyAcks().size(), seconds(recovered),
                firstCompletionAfter(liftedAt)));
    }

    private IdemRuntime start(boolean transactional, String business) {
        return start(transactional, business, Duration.ofSeconds(2), Duration.ofSeconds(1));
    }

    private IdemRuntime start(boolean transactional, String business, Duration lease, Duration socketTimeout) {
        String yaml = """
                broker: { type: memory }
                store:
                  type: jdbc
                  jdbc:
                    url: "%s"
                    %s
                    table: %s
                    pool.maximum-size: 6
                    pool.connection-timeout: 1s
                    socket-timeout: %ds
                    purge.interval: 0s
                runtime: { http.enabled: false }
                pipelines:
                  %s:
                    source: orders
                    transactional: %s
                    ordering: none
                    concurrency: 4
                    max-in-flight: 200
                    lease: %dms
                """.formatted(proxy.proxiedUrl(db.url), db.username == null ? "" : "username: " + db.username,
                db.table, socketTimeout.toSeconds(), PIPELINE, transactional, lease.toMillis());
        return Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", audit)
                .meterRegistry(meters)
                .outcomeListener((pipeline, outcome, message, key) -> {
                    if (outcome.equals("processed")) {
                        completions.add(System.nanoTime());
                    }
                })
                .handler(PIPELINE, (message, context) -> {
                    String id = message.idempotencyKey().orElseThrow();
                    runs.record(id);
                    if (business != null) {
                        Connection connection = context.transaction(Connection.class).orElseThrow();
                        try (PreparedStatement insert = connection.prepareStatement(
                                "INSERT INTO " + business + " (order_id) VALUES (?)")) {
                            insert.setString(1, id);
                            insert.executeUpdate();
                        }
                    }
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

    private void assertNoReRuns() {
        assertThat(runs.rerunKeys()).as("IDs whose handler ran twice; outcomes %s", outcomes()).isEmpty();
        assertThat(count("lease-lost")).as("completions refused because this process took its own key over").isZero();
    }

    /** Whether the message's key is completed, read on the test's own connection (not through the proxy). */
    private boolean completed(InboundMessage message) {
        return direct.inspect(new StoreKey(PIPELINE, message.headers().get("message-id")))
                .map(k -> k.state() == StoredKey.State.COMPLETED).orElse(false);
    }

    private void awaitDrained() {
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
                .until(() -> broker.depth("orders") + broker.unsettled("orders") == 0);
    }

    private void assertNothingLostNorAckedEarly() {
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
        assertThat(count("processed") + count("duplicate")).as("messages settled").isEqualTo(ids.size());
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
                c -> c.getId().getTag("outcome"), TreeMap::new, Collectors.summingDouble(Counter::count)));
    }

    private long firstCompletionAfter(long nanos) {
        return completions.stream().filter(t -> t - nanos >= 0).min(Long::compare)
                .map(t -> TimeUnit.NANOSECONDS.toMillis(t - nanos)).orElse(-1L);
    }

    private static double seconds(Duration d) {
        return d.toMillis() / 1000.0;
    }
}
