package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.ConcurrentUpdateException;
import dev.idem.api.MessageHandler;
import dev.idem.api.RejectedException;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The business-level guards in transactional mode, end to end on the JDBC store: rejected runs roll back, a
 * conflict re-runs in a new transaction, emitted messages go through the outbox and its relay, the sequence
 * guard keeps each aggregate in order inside the handler's transaction, and grouped transactions keep every
 * outcome per message. On PostgreSQL, MariaDB and H2.
 */
class TransactionalGuardsTest {

    @TempDir
    Path h2Directory;

    private TestDatabase db;
    private final InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 100);
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final List<IdemRuntime> runtimes = new ArrayList<>();

    @AfterEach
    void close() {
        for (IdemRuntime r : runtimes) {
            r.stop(Duration.ofSeconds(10));
        }
        broker.close();
        if (db != null) {
            db.dropTables();
        }
    }

    private TestDatabase database(String name) {
        db = switch (name) {
            case "postgresql" -> TestDatabase.postgres();
            case "mariadb" -> TestDatabase.mariadb();
            default -> TestDatabase.h2(h2Directory);
        };
        return db;
    }

    private IdemRuntime start(String pipelineSettings, MessageHandler handler) {
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
                  orders:
                    source: orders
                    dead-letter: orders.DLQ
                    transactional: true
                """.formatted(db.url, db.username == null ? "" : "username: " + db.username, db.table)
                + (pipelineSettings.contains("retry:") ? "" : """
                    retry:
                      max-attempts: 3
                      initial-backoff: 1ms
                      max-backoff: 5ms
                """)
                + pipelineSettings.lines().map(l -> "    " + l + "\n").collect(Collectors.joining());
        IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", broker.connect())
                .meterRegistry(meters)
                .handler("orders", handler)
                .start();
        runtimes.add(runtime);
        return runtime;
    }

    private void publish(String id, Map<String, String> headers, String payload) {
        Map<String, String> all = new HashMap<>(headers);
        all.put("message-id", id);
        broker.publish("orders", new OutboundMessage(null, null, all, payload.getBytes(StandardCharsets.UTF_8)));
    }

    private double count(String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    private void awaitSettled() {
        await().atMost(Duration.ofMinutes(2)).until(() -> broker.depth("orders") + broker.unsettled("orders") == 0);
    }

    private String table(String prefix, String columns) {
        String name = db.newTable(prefix);
        db.jdbi().useHandle(h -> h.execute("CREATE TABLE " + name + " (" + columns + ")"));
        return name;
    }

    private int rows(String table) {
        return db.jdbi().withHandle(h -> h.createQuery("SELECT COUNT(*) FROM " + table).mapTo(Integer.class).one());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"postgresql", "mariadb", "h2"})
    void aRejectedRunRollsBackItsWritesIsAckedAndItsKeyCompletes(String database) {
        database(database);
        String writes = table("writes", "id VARCHAR(64) NOT NULL");
        AtomicInteger runs = new AtomicInteger();
        start("", (message, context) -> {
            runs.incrementAndGet();
            context.transaction(Handle.class).orElseThrow()
                    .execute("INSERT INTO " + writes + " (id) VALUES (?)", message.idempotencyKey().orElseThrow());
            throw new RejectedException("order is CANCELLED");
        });
        publish("o-1", Map.of(), "pay");
        await().until(() -> count("rejected") == 1);
        publish("o-1", Map.of(), "pay");
        await().until(() -> count("duplicate") == 1);
        awaitSettled();
        assertThat(runs).hasValue(1);
        assertThat(rows(writes)).as("the rejected run's writes").isZero();
        assertThat(broker.depth("orders.DLQ")).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"postgresql", "h2"})
    void aConflictRunsAgainAtOnceInANewTransaction(String database) {
        database(database);
        String writes = table("writes", "id VARCHAR(64) NOT NULL");
        AtomicInteger runs = new AtomicInteger();
        start("retry:\n  max-attempts: 3\n  initial-backoff: 1ms\n  conflict-attempts: 4\n", (message, context) -> {
            context.transaction(Handle.class).orElseThrow()
                    .execute("INSERT INTO " + writes + " (id) VALUES (?)", "run-" + runs.incrementAndGet());
            if (runs.get() < 3) {
                throw new ConcurrentUpdateException("version moved");
            }
        });
        publish("o-2", Map.of(), "update");
        await().until(() -> count("processed") == 1);
        assertThat(runs).hasValue(3);
        assertThat(count("conflict-retried")).isEqualTo(2);
        assertThat(count("retried")).isZero();
        assertThat(rows(writes)).as("only the committed run's write stays").isEqualTo(1);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"postgresql", "mariadb", "h2"})
    void emittedMessagesGoThroughTheOutboxOnlyWhenTheTransactionCommits(String database) {
        database(database);
        AtomicInteger runs = new AtomicInteger();
        start("", (message, context) -> {
            String key = message.idempotencyKey().orElseThrow();
            context.send("payments", key, ("payment for " + key).getBytes(StandardCharsets.UTF_8),
                    Map.of("type", "payment-requested"));
            if (key.equals("o-fail-once") && runs.incrementAndGet() == 1) {
                throw new IllegalStateException("fails after emitting (test)");
            }
        });
        int orders = 50;
        for (int i = 0; i < orders; i++) {
            publish("o-" + i, Map.of(), "place");
        }
        publish("o-fail-once", Map.of(), "place");
        List<InboundMessage> payments = new ArrayList<>();
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            payments.addAll(broker.drain("payments"));
            return payments.size() >= orders + 1;
        });
        awaitSettled();
        await().until(() -> rows(db.table + OutboxTable.SUFFIX) == 0);
        payments.addAll(broker.drain("payments"));

        Set<String> ids = payments.stream().map(m -> m.headers().get("message-id")).collect(Collectors.toSet());
        assertThat(payments).as("one payment per order, the failed run's emit rolled back").hasSize(orders + 1);
        assertThat(ids).hasSize(orders + 1);
        assertThat(payments).allSatisfy(m -> assertThat(m.headers()).containsEntry("type", "payment-requested"));
        InboundMessage failedOnce = payments.stream().filter(m -> "o-fail-once".equals(m.key())).findFirst()
                .orElseThrow();
        assertThat(new String(failedOnce.payload(), StandardCharsets.UTF_8)).isEqualTo("payment for o-fail-once");
        assertThat(meters.find("idem.outbox.relayed").counter().count()).isEqualTo(orders + 1);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"postgresql", "mariadb", "h2"})
    void sequencedEventsApplyInOrderInsideTheTransaction(String database) {
        database(database);
        String balances = table("balances", "account VARCHAR(64) NOT NULL, balance BIGINT NOT NULL,"
                + " last_seq BIGINT NOT NULL");
        String applied = table("applied", "account VARCHAR(64) NOT NULL, seq BIGINT NOT NULL,"
                + " PRIMARY KEY (account, seq)");
        int accounts = 20;
        int events = 15;
        start("""
                concurrency: 4
                sequence:
                  aggregate:
                    - type: header
                      name: account
                  number:
                    - type: header
                      name: seq
                """, (message, context) -> {
                    Handle h = context.transaction(Handle.class).orElseThrow();
                    String account = message.headers().get("account");
                    long seq = Long.parseLong(message.headers().get("seq"));
                    h.execute("INSERT INTO " + applied + " (account, seq) VALUES (?, ?)", account, seq);
                    int updated = h.execute("UPDATE " + balances + " SET balance = MOD(balance * 31 + ?, 1000000007),"
                            + " last_seq = ? WHERE account = ? AND last_seq = ?", seq, seq, account, seq - 1);
                    if (updated == 0) {
                        if (seq != 1) {
                            throw new IllegalStateException(account + " got " + seq + " out of order");
                        }
                        h.execute("INSERT INTO " + balances + " (account, balance, last_seq) VALUES (?, ?, ?)",
                                account, seq, seq);
                    }
                });
        Random random = new Random(11);
        List<String[]> stream = new ArrayList<>();
        for (int a = 0; a < accounts; a++) {
            for (int seq = 1; seq <= events; seq++) {
                stream.add(new String[] {"acct-" + a, Integer.toString(seq)});
            }
        }
        for (int i = 0; i < stream.size(); i += 6) {
            Collections.shuffle(stream.subList(i, Math.min(stream.size(), i + 6)), random);
        }
        for (String[] e : stream) {
            publish(e[0] + "-" + e[1], Map.of("account", e[0], "seq", e[1]), "event");
        }
        await().atMost(Duration.ofMinutes(2)).until(() -> count("processed") == accounts * events);
        for (int a = 0; a < accounts; a++) {
            publish("replay-" + a, Map.of("account", "acct-" + a, "seq", "2"), "event");
        }
        await().until(() -> count("stale") == accounts);
        awaitSettled();

        long expected = 0;
        for (int seq = 1; seq <= events; seq++) {
            expected = (expected * 31 + seq) % 1_000_000_007L;
        }
        long fold = expected;
        List<Map<String, Object>> rows = db.jdbi().withHandle(h -> h.createQuery("SELECT account, balance, last_seq"
                + " FROM " + balances).mapToMap().list());
        assertThat(rows).hasSize(accounts).allSatisfy(r -> {
            assertThat(((Number) r.get("balance")).longValue()).isEqualTo(fold);
            assertThat(((Number) r.get("last_seq")).longValue()).isEqualTo(events);
        });
        assertThat(rows(applied)).isEqualTo(accounts * events);
        assertThat(broker.depth("orders.DLQ")).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"postgresql", "mariadb", "h2"})
    void groupedTransactionsCommitTogetherAndAFailingMessageRollsBackAlone(String database) {
        database(database);
        String writes = table("writes", "id VARCHAR(64) NOT NULL");
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        start("""
                transactional.group: 20
                concurrency: 2
                ordering: none
                retry:
                  max-attempts: 2
                  initial-backoff: 1ms
                  max-backoff: 1ms
                """, (message, context) -> {
                    String key = message.idempotencyKey().orElseThrow();
                    runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                    context.transaction(Handle.class).orElseThrow()
                            .execute("INSERT INTO " + writes + " (id) VALUES (?)", key);
                    if (key.startsWith("poison")) {
                        throw new IllegalStateException("always fails after its write (test)");
                    }
                    if (key.startsWith("reject")) {
                        throw new RejectedException("not applicable");
                    }
                });
        int good = 300;
        for (int i = 0; i < good; i++) {
            publish("ok-" + i, Map.of(), "x");
            if (i % 50 == 7) {
                publish("poison-" + i, Map.of(), "x");
                publish("reject-" + i, Map.of(), "x");
                publish("ok-" + i, Map.of(), "x");
            }
        }
        await().atMost(Duration.ofMinutes(2)).until(() -> count("processed") == good && count("dead-lettered") == 6
                && count("rejected") == 6);
        awaitSettled();
        List<String> written = db.jdbi().withHandle(h -> h.createQuery("SELECT id FROM " + writes)
                .mapTo(String.class).list());
        assertThat(written).as("one write per good message, none of the failed or rejected runs")
                .hasSize(good).doesNotHaveDuplicates().allSatisfy(id -> assertThat(id).startsWith("ok-"));
        assertThat(runs.entrySet()).allSatisfy(e -> assertThat(e.getValue().get())
                .as(e.getKey()).isEqualTo(e.getKey().startsWith("poison") ? 2 : 1));
        assertThat(count("duplicate")).isEqualTo(6);
        assertThat(broker.depth("orders.DLQ")).isEqualTo(6);
    }
}
