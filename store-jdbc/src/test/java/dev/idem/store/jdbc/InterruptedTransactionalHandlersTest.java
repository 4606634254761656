package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Idem interrupts a handler that runs past {@code handler-timeout}, and the handlers still running at the end of a
 * graceful stop. In transactional mode that handler runs its SQL on the store's own connection, so the interrupt
 * lands inside the store's I/O: on an H2 file it used to close H2's {@code FileChannel} and, with it, the database
 * (every later claim failed with "The database has been closed", and a reopen could find the file corrupted).
 *
 * <p>Every first run of a message here writes far more than its timeout allows, in rows large enough that H2 writes
 * its pages to the file while the handler is still inserting, so the timeouts land inside that I/O; later runs write
 * little and commit. Between rounds the runtime is stopped with handlers still running (interrupted again) and
 * started anew over the same file. At the end the store is opened afresh: every key must be completed, with the rows
 * of exactly one run, and nothing may be dead-lettered or lost. On PostgreSQL and MariaDB the same run shows that an
 * interrupted statement leaves its connection clean: a connection handed back mid-transaction would commit a rolled
 * back run's rows with the next run, which the one-run check would see.
 */
class InterruptedTransactionalHandlersTest {

    private static final int MESSAGES = 160;
    private static final int ROUNDS = 4;
    private static final String FILLER = "x".repeat(900);

    @TempDir
    Path h2Directory;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"h2", "postgresql", "mariadb"})
    void interruptedHandlersLeaveTheStoreUsableAndEveryKeyCompletedWithOneRunsRows(String database) throws Exception {
        TestDatabase db = switch (database) {
            case "postgresql" -> TestDatabase.postgres();
            case "mariadb" -> TestDatabase.mariadb();
            default -> TestDatabase.h2(h2Directory);
        };
        String business = db.newTable("business");
        db.jdbi().useHandle(h -> h.execute("CREATE TABLE " + business
                + " (order_id VARCHAR(64) NOT NULL, attempt INT NOT NULL, filler VARCHAR(1000))"));
        InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 50);
        for (int i = 0; i < MESSAGES; i++) {
            broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", "order-" + i),
                    ("order-" + i).getBytes(StandardCharsets.UTF_8)));
        }
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try {
            for (int round = 1; round <= ROUNDS; round++) {
                IdemRuntime runtime = start(db, broker, business, meters);
                double before = count(meters, "processed");
                boolean last = round == ROUNDS;
                try {
                    await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(20))
                            .failFast("the store stopped answering", () -> !runtime.health().ready())
                            .until(() -> last ? drained(broker) : count(meters, "processed") - before >= MESSAGES / 8.0
                                    || drained(broker));
                } finally {
                    // Not the last round: handlers are still running, and the stop interrupts them.
                    runtime.stop(Duration.ZERO);
                }
            }

            Map<String, List<Integer>> attemptsByKey = new HashMap<>();
            db.jdbi().useHandle(h -> h.createQuery("SELECT order_id, attempt FROM " + business)
                    .map((rs, ctx) -> Map.entry(rs.getString(1), rs.getInt(2)))
                    .forEach(e -> attemptsByKey.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue())));
            List<String> notOneRun = attemptsByKey.entrySet().stream()
                    .filter(e -> e.getValue().stream().distinct().count() != 1
                            || e.getValue().size() != rowsFor(e.getValue().get(0)))
                    .map(Map.Entry::getKey).sorted().collect(Collectors.toList());
            assertThat(notOneRun).as("keys whose rows are not those of exactly one run").isEmpty();
            assertThat(attemptsByKey).as("keys with committed rows").hasSize(MESSAGES);
            assertThat(broker.depth("orders.DLQ")).as("dead letters").isZero();
            assertThat(count(meters, "retried")).as("runs interrupted by their timeout").isPositive();

            // A fresh store over the same database: for H2 the file is opened again, and every key must be there.
            try (JdbcDedupStore reopened = AbstractJdbcDedupStoreTest.create(db.config())) {
                List<ClaimRequest> every = new ArrayList<>();
                for (int i = 0; i < MESSAGES; i++) {
                    every.add(new ClaimRequest(new StoreKey("orders", "order-" + i), null, Duration.ofSeconds(30),
                            Duration.ofDays(1)));
                }
                assertThat(reopened.claim(every)).as("every key is completed").containsOnly(new ClaimResult.Duplicate(true));
            }
        } finally {
            db.dropTables();
        }
    }

    /** The rows a run writes: the first far more than its timeout allows, the later ones a few. */
    private static int rowsFor(int attempt) {
        return attempt == 1 ? 2_500 : 3;
    }

    private static boolean drained(InMemoryBroker broker) {
        return broker.depth("orders") + broker.unsettled("orders") == 0;
    }

    private static IdemRuntime start(TestDatabase db, InMemoryBroker broker, String business, SimpleMeterRegistry meters) {
        String yaml = """
                broker: { type: memory }
                store:
                  type: jdbc
                  jdbc:
                    url: "%s"
                    %s
                    table: %s
                    pool.maximum-size: 6
                runtime: { http.enabled: false }
                pipelines:
                  orders:
                    source: orders
                    transactional: true
                    ordering: none
                    concurrency: 4
                    handler-timeout: 40ms
                    retry:
                      max-attempts: 5
                      initial-backoff: 1ms
                      max-backoff: 5ms
                """.formatted(db.url, db.username == null ? "" : "username: " + db.username, db.table);
        return Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", broker.connect())
                .meterRegistry(meters)
                .handler("orders", (message, context) -> {
                    Connection connection = context.transaction(Connection.class).orElseThrow();
                    int attempt = message.attempt();
                    try (PreparedStatement insert = connection.prepareStatement(
                            "INSERT INTO " + business + " (order_id, attempt, filler) VALUES (?, ?, ?)")) {
                        for (int row = 0; row < rowsFor(attempt); row++) {
                            if (Thread.currentThread().isInterrupted()) {
                                throw new InterruptedException("interrupted after " + row + " rows (test)");
                            }
                            insert.setString(1, message.idempotencyKey().orElseThrow());
                            insert.setInt(2, attempt);
                            insert.setString(3, FILLER);
                            insert.executeUpdate();
                        }
                    }
                })
                .start();
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
