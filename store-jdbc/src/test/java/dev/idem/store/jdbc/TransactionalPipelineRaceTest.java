package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.BatchHandler;
import dev.idem.api.Message;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Transactional mode (docs/design.md, "Transactional mode") end to end: two runtimes with the same pipeline
 * (two processes of one service) get every one of 10,000 keys at about the same time, and their handler writes one
 * business row per message in the store's transaction, failing at random 10 % of the time after the
 * write. With {@code transactional.group} above 1 the runs share transactions, each under a savepoint
 * ({@code per-message}), or under none until a failure rolls the group back and runs it again with them
 * ({@code on-failure}).
 * Exactly one business row per key must remain: the failed runs rolled back, and the losing
 * copy of each race was deferred while the key was claimed (or waited on its row while the winner's
 * transaction ran) and was then found a duplicate.
 */
class TransactionalPipelineRaceTest {

    private static final int KEYS = 10_000;

    @TempDir
    Path h2Directory;

    @ParameterizedTest(name = "{0}, transactional.group {1}, savepoints {2}")
    @CsvSource({"postgresql, 1, per-message", "mariadb, 1, per-message", "h2, 1, per-message",
            "postgresql, 25, per-message", "mariadb, 25, per-message", "h2, 25, per-message",
            "postgresql, 25, on-failure", "mariadb, 25, on-failure"})
    void twoPipelinesRacingOverTheSameKeysLeaveExactlyOneBusinessRowPerKey(String database, int group,
            String savepoints) {
        TestDatabase db = switch (database) {
            case "postgresql" -> TestDatabase.postgres();
            case "mariadb" -> TestDatabase.mariadb();
            default -> TestDatabase.h2(h2Directory);
        };
        String business = businessTable(db);
        InMemoryBroker broker = publishedTwice(KEYS);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        race(broker, start(db, "in-a", broker, business, meters, group, savepoints),
                start(db, "in-b", broker, business, meters, group, savepoints));
        try {
            assertOneRowPerKey(db, business, broker, meters, KEYS);
            assertThat(count(meters, "retried")).as("the random failures did happen").isPositive();
        } finally {
            db.dropTables();
        }
    }

    /**
     * The same race with a batch handler ({@code BatchHandler}, {@code batch.size: 50}): each batch is one
     * transaction. A batch fails at random in two ways: its handler throws after writing (the batch is split to find
     * the failing message) or reports one message failed (the transaction is rolled back and run again without it).
     * Still exactly one business row per key.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"postgresql", "mariadb", "h2"})
    void twoBatchPipelinesRacingOverTheSameKeysLeaveExactlyOneBusinessRowPerKey(String database) {
        int keys = 3_000;
        TestDatabase db = switch (database) {
            case "postgresql" -> TestDatabase.postgres();
            case "mariadb" -> TestDatabase.mariadb();
            default -> TestDatabase.h2(h2Directory);
        };
        String business = businessTable(db);
        InMemoryBroker broker = publishedTwice(keys);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        BatchHandler handler = (messages, context) -> {
            Handle handle = context.transaction(Handle.class).orElseThrow();
            PreparedBatch insert = handle.prepareBatch("INSERT INTO " + business + " (order_id) VALUES (?)");
            for (Message m : messages) {
                insert.bind(0, m.idempotencyKey().orElseThrow()).add();
            }
            insert.execute();
            int dice = ThreadLocalRandom.current().nextInt(40);
            if (dice < messages.size() && dice % 2 == 0) {
                throw new IllegalStateException("random failure of the batch after its writes (test)");
            }
            if (dice < messages.size()) {
                context.fail(messages.get(dice), new IllegalStateException("random failure of one message (test)"));
            }
        };
        race(broker, startBatch(db, "in-a", broker, meters, handler), startBatch(db, "in-b", broker, meters, handler));
        try {
            assertOneRowPerKey(db, business, broker, meters, keys);
            assertThat(count(meters, "retried")).as("the reported failures did happen").isPositive();
            assertThat(meters.find("idem.batch.splits").counters().stream().mapToDouble(Counter::count).sum())
                    .as("the thrown failures did happen").isPositive();
            assertThat(meters.find("idem.batch.size").summaries().stream().mapToDouble(x -> x.max()).max()
                    .orElseThrow()).as("batches were gathered").isGreaterThan(1);
        } finally {
            db.dropTables();
        }
    }

    @org.junit.jupiter.api.Test
    void aBatchHandlerIsNotGroupedByTransactionalGroup() {
        TestDatabase db = TestDatabase.h2(h2Directory);
        String yaml = """
                broker: { type: memory }
                store: { type: jdbc, jdbc: { url: "%s", table: %s } }
                pipelines:
                  payments:
                    source: in
                    transactional: true
                    transactional.group: 20
                """.formatted(db.url, db.table);
        InMemoryBroker broker = new InMemoryBroker();
        BatchHandler handler = (messages, context) -> { };
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Idem.builder().configYaml(yaml).env(Map.of())
                        .broker("memory", broker.connect()).handler("payments", handler).start())
                .hasStackTraceContaining("pipelines.payments.transactional.group is 20, but the handler")
                .hasStackTraceContaining("Set batch.size instead");
        broker.close();
    }

    private static IdemRuntime startBatch(TestDatabase db, String source, InMemoryBroker broker,
            SimpleMeterRegistry meters, BatchHandler handler) {
        String yaml = """
                broker: { type: memory }
                store:
                  type: jdbc
                  jdbc:
                    url: "%s"
                    %s
                    table: %s
                    pool.maximum-size: 6
                pipelines:
                  payments:
                    source: %s
                    transactional: true
                    ordering: none
                    concurrency: 4
                    batch:
                      size: 50
                      linger: 5ms
                    retry:
                      max-attempts: 30
                      initial-backoff: 1ms
                      max-backoff: 5ms
                """.formatted(db.url, db.username == null ? "" : "username: " + db.username, db.table, source);
        return Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", broker.connect())
                .meterRegistry(meters)
                .handler("payments", handler)
                .start();
    }

    /** The business table: one row per run that committed. */
    private static String businessTable(TestDatabase db) {
        String business = db.newTable("business");
        db.jdbi().useHandle(h -> h.execute("CREATE TABLE " + business + " (order_id VARCHAR(64) NOT NULL)"));
        return business;
    }

    /** A broker holding every key in both queues, {@code in-a} and {@code in-b}. */
    private static InMemoryBroker publishedTwice(int keys) {
        InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 100);
        for (String queue : List.of("in-a", "in-b")) {
            for (int i = 0; i < keys; i++) {
                broker.publish(queue, new OutboundMessage(null, null, Map.of("message-id", "order-" + i),
                        ("order-" + i).getBytes(StandardCharsets.UTF_8)));
            }
        }
        return broker;
    }

    /** Lets the two runtimes race until both queues are drained and settled, then stops them. */
    private static void race(InMemoryBroker broker, IdemRuntime a, IdemRuntime b) {
        try {
            await().atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(200)).until(() ->
                    broker.depth("in-a") + broker.depth("in-b") + broker.unsettled("in-a") + broker.unsettled("in-b") == 0);
        } finally {
            a.stop(Duration.ofSeconds(10));
            b.stop(Duration.ofSeconds(10));
        }
    }

    /** Exactly one business row per key, no dead letter, each key processed once and found a duplicate once. */
    private static void assertOneRowPerKey(TestDatabase db, String business, InMemoryBroker broker,
            SimpleMeterRegistry meters, int keys) {
        List<String> notOnce = db.jdbi().withHandle(h -> h.createQuery("SELECT order_id FROM " + business
                + " GROUP BY order_id HAVING COUNT(*) <> 1").mapTo(String.class).list());
        int distinct = db.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(DISTINCT order_id) FROM " + business)
                .mapTo(Integer.class).one());
        assertThat(notOnce).as("keys with other than one business row").isEmpty();
        assertThat(distinct).isEqualTo(keys);
        assertThat(broker.depth("in-a.DLQ") + broker.depth("in-b.DLQ")).as("dead letters").isZero();
        assertThat(count(meters, "processed")).isEqualTo(keys);
        assertThat(count(meters, "duplicate")).isEqualTo(keys);
    }

    private static IdemRuntime start(TestDatabase db, String source, InMemoryBroker broker, String business,
            SimpleMeterRegistry meters, int group, String savepoints) {
        String yaml = """
                broker: { type: memory }
                store:
                  type: jdbc
                  jdbc:
                    url: "%s"
                    %s
                    table: %s
                    pool.maximum-size: 6
                pipelines:
                  payments:
                    source: %s
                    transactional: true
                    transactional.group: %d
                    transactional.savepoints: %s
                    ordering: none
                    concurrency: 4
                    retry:
                      max-attempts: 30
                      initial-backoff: 1ms
                      max-backoff: 5ms
                """.formatted(db.url, db.username == null ? "" : "username: " + db.username, db.table, source, group,
                        savepoints);
        return Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", broker.connect())
                .meterRegistry(meters)
                .handler("payments", (message, context) -> {
                    Handle handle = context.transaction(Handle.class).orElseThrow();
                    handle.execute("INSERT INTO " + business + " (order_id) VALUES (?)",
                            message.idempotencyKey().orElseThrow());
                    if (ThreadLocalRandom.current().nextInt(10) == 0) {
                        throw new IllegalStateException("random failure after the write (test)");
                    }
                })
                .start();
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
