package dev.idem.cli;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.cli.outbox.LedgerHandler;
import dev.idem.cli.outbox.OrderHandler;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Emitted messages end to end under crashes (issue 11, part 3): {@value #NODES} {@code bin/idem run} processes of
 * one configuration with two pipelines. Pipeline A ({@code orders}, {@link OrderHandler}) consumes the topic
 * {@code orders-<run>} and emits, through {@code HandlerContext.send}, one {@code payment-requested} per order to
 * {@code payments-<run>}; pipeline B ({@code ledger}, {@link LedgerHandler}) consumes that topic, keyed by the
 * emitted message's deterministic {@code message-id} header, and books one ledger row per payment. A producer in this
 * JVM publishes {@value #UNIQUE_ORDERS} orders at {@value #RATE} messages per second, {@value #REPEAT_PERCENT} % of
 * the messages repeats (half right after their original, half 2 to 10 seconds later), while every {@link #KILL_EVERY}
 * one process, in turn, is killed with {@code kill -9} (A and B die together) and restarted at once. Once the
 * stream ended and everything settled, every order must have exactly one ledger row, none lost:
 *
 * <ul>
 *   <li><b>Transactional mode, JDBC store on PostgreSQL.</b> A's {@code orders_seen} row, its key and its outbox row
 *       commit in one transaction; the relays of all processes publish the outbox and delete it; B's ledger row
 *       commits with B's key. Exact: one {@code orders_seen} row and one ledger row per order, and the outbox table
 *       ({@code idem_keys_outbox}) is empty at the end. A relay killed between publishing and deleting re-publishes
 *       the same ID, which B drops.</li>
 *   <li><b>Plain mode, Redis store.</b> A publishes its payment (confirmed) before its key completes, so a kill in
 *       between re-runs A and re-sends the payment under the same ID; B's dedup absorbs those re-sends. B's own
 *       ledger row is a line in a file: a kill after B wrote it and before B's key completed re-runs B (its honest
 *       window, which no message ID can close), so duplicate ledger rows are allowed up to B's
 *       {@code max-in-flight} per kill, as in {@link ScaleOutIT}; anything beyond that would be A's re-sends
 *       getting through.</li>
 * </ul>
 *
 * <p>In both modes every run of A records the payment ID {@code send} returned, and each order must have had one
 * payment ID only (the IDs are deterministic across re-runs and processes). The payments the topic holds beyond one
 * per order are A's re-sends (plain) or the relays' re-publishes (transactional); the latter are at most one relay
 * batch per kill, or two relays published the same rows. Each case prints one summary line.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class OutboxIT {

    private static final int NODES = 3;
    private static final int PARTITIONS = 4;
    private static final int UNIQUE_ORDERS = 10_000;
    private static final int REPEAT_PERCENT = 20;
    /** Messages in all: {@value #UNIQUE_ORDERS} orders and the repeats, {@value #REPEAT_PERCENT} % of the messages. */
    private static final int MESSAGES = UNIQUE_ORDERS * 100 / (100 - REPEAT_PERCENT);
    private static final int RATE = 500;
    private static final Duration KILL_EVERY = Duration.ofSeconds(3);
    /** Kills the stream must see at least, so that the faults really struck while it flowed. */
    private static final int MIN_KILLS = 5;
    private static final int CONCURRENCY = 8;
    /** Transactional runs hold a pooled connection each: two pipelines of this many, the relay and the claims. */
    private static final int TX_CONCURRENCY = 4;
    private static final int POOL = 12;
    private static final int MAX_IN_FLIGHT = 100;
    /**
     * The rows one relay call takes and publishes before it deletes them ({@code OutboxRelay.BATCH}): what a relay
     * killed between publishing and deleting can have published already, so at most this many re-publishes per kill.
     */
    private static final int RELAY_BATCH = 200;
    private static final String ORDERS_SEEN = "orders_seen";
    private static final String LEDGER = "ledger";
    /** The store's outbox: its keys table ({@code idem_keys}, the default) with {@code _outbox} added. */
    private static final String OUTBOX = "idem_keys_outbox";
    private static final Duration START_TIMEOUT = Duration.ofMinutes(1);
    private static final Duration SETTLE_TIMEOUT = Duration.ofSeconds(90);
    private static final Duration QUIET = Duration.ofSeconds(3);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void transactionalPostgresStoreBooksEveryOrderExactlyOnceThroughTheOutboxWhileProcessesAreKilled()
            throws Exception {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_outbox_" + run;
        String jdbc = url + "?user=postgres&currentSchema=" + schema;
        FaultHistory ledger = FaultHistory.transactional(dir.resolve("runs"), jdbc, LEDGER, "order_id");
        FaultHistory ordersSeen = FaultHistory.transactional(dir.resolve("order-runs"), jdbc, ORDERS_SEEN, "order_id");
        ledger.execute("CREATE SCHEMA " + schema);
        try {
            ledger.execute("CREATE TABLE " + ORDERS_SEEN + " (id BIGSERIAL PRIMARY KEY, order_id VARCHAR(64) NOT NULL,"
                    + " pid BIGINT NOT NULL)");
            // No unique constraint on the order: a duplicate must show, not be hidden.
            ledger.execute("CREATE TABLE " + LEDGER + " (id BIGSERIAL PRIMARY KEY, order_id VARCHAR(64) NOT NULL,"
                    + " payment_id VARCHAR(64) NOT NULL, pid BIGINT NOT NULL)");
            String store = """
                    store:
                      type: jdbc
                      jdbc: { url: "%s?currentSchema=%s", username: postgres, pool: { maximum-size: %d } }
                    """.formatted(url, schema, POOL);
            scenario("Kafka (4 partitions) + JDBC (PostgreSQL) transactional", store, ledger, ordersSeen,
                    () -> count(jdbc, OUTBOX));
        } finally {
            ledger.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Test
    void plainRedisStoreBooksEveryOrderOnceAsLedgerDedupAbsorbsTheReSentPaymentsWhileProcessesAreKilled()
            throws Exception {
        String uri = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        String store = """
                store:
                  type: redis
                  redis: { uri: "%s", key-prefix: "idem-outbox-%s:" }
                """.formatted(uri, run);
        scenario("Kafka (4 partitions) + Redis plain", store, FaultHistory.plain(dir.resolve("runs")),
                FaultHistory.plain(dir.resolve("order-runs")), null);
    }

    /** Reads a number the test follows; {@code null} where the case has none. */
    @FunctionalInterface
    private interface Count {
        long get();
    }

    private void scenario(String name, String store, FaultHistory ledger, FaultHistory orderRuns, Count outbox)
            throws Exception {
        long started = System.nanoTime();
        boolean transactional = ledger.transactional();
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String ordersTopic = "orders-" + run;
        String paymentsTopic = "payments-" + run;
        kafka.createTopic(ordersTopic, PARTITIONS);
        kafka.createTopic(paymentsTopic, PARTITIONS);
        MessageStream stream = MessageStream.plan("outbox-" + run + "-", MESSAGES, REPEAT_PERCENT, RATE, 13);
        // The order ID A reads from the payload ("order-<n>"), one per unique message ID.
        Set<String> orders = stream.messages.stream().map(MessageStream.Message::key)
                .collect(Collectors.toCollection(TreeSet::new));
        Map<String, String> env = new HashMap<>();
        env.put(OrderHandler.PAYMENTS_ENV, paymentsTopic);
        env.put(OrderHandler.RUNS_DIR_ENV, dir.resolve("order-runs").toString());
        if (transactional) {
            env.put(OrderHandler.TABLE_ENV, ORDERS_SEEN);
            env.put(LedgerHandler.TABLE_ENV, LEDGER);
        }
        try (IdemCluster cluster = new IdemCluster(dir, NODES,
                port -> config(kafka, store, ordersTopic, paymentsTopic, transactional, port), env)) {
            cluster.nodes.forEach(n -> HandlerJar.install(n.idem, OrderHandler.class, "outbox-handlers.jar"));
            cluster.startAndAwaitServing(START_TIMEOUT);
            stream.publishToKafka(kafka.bootstrapServers(), ordersTopic);
            killInTurnWhileTheStreamFlows(cluster, stream);
            stream.done().join();
            cluster.awaitUntil(() -> ledger.withEffect(orders) == orders.size(),
                    () -> "every order to have a ledger row (now " + ledger.withEffect(orders) + " of " + orders.size()
                            + ")", SETTLE_TIMEOUT);
            if (outbox != null) {
                cluster.awaitUntil(() -> outbox.get() == 0, () -> "the outbox to be empty (now " + outbox.get()
                        + " rows)", SETTLE_TIMEOUT);
            }
            cluster.awaitQuiet(QUIET, () -> List.of(ledger.runs().size(), orderRuns.runs().size(),
                    outbox == null ? 0 : outbox.get(), records(kafka, paymentsTopic)), SETTLE_TIMEOUT);
            cluster.terminateAll();

            FaultHistory.Tally booked = ledger.tally(orders);
            FaultHistory.Tally seen = orderRuns.tally(orders);
            Map<String, Set<String>> paymentIds = paymentIdsPerOrder(dir.resolve("order-runs"));
            List<String> severalIds = paymentIds.entrySet().stream().filter(e -> e.getValue().size() > 1)
                    .map(e -> e.getKey() + "=" + e.getValue()).toList();
            long ledgerRows = ledger.effects().values().stream().mapToLong(Integer::longValue).sum();
            long payments = records(kafka, paymentsTopic);
            long outboxLeft = outbox == null ? 0 : outbox.get();
            int kills = cluster.kills();
            long bound = (long) MAX_IN_FLIGHT * kills;
            System.out.printf("[fault] outbox, %s, %d processes (A and B in each): published %,d (%,d unique orders,"
                    + " %,d repeats, %,d of them 2-10 s after the original) at %d/s; kills %d; ledger rows %,d;"
                    + " duplicates %d%s; lost %d;%s A runs %,d (re-runs %d), payments on the topic %,d (%s %d); B runs"
                    + " %,d (re-runs %d);%s took %ds%n", name, NODES, stream.messages.size(), orders.size(),
                    stream.repeats(), stream.repeatsSecondsApart(), RATE, kills,
                    ledgerRows, booked.duplicateEffects(),
                    transactional ? "" : " (bound " + bound + " = " + MAX_IN_FLIGHT + " in flight x " + kills
                            + " kills)", booked.lost().size(),
                    transactional ? " orders_seen duplicates " + seen.duplicateEffects() + ", lost "
                            + seen.lost().size() + ";" : "",
                    seen.runs(), seen.reruns(), payments, transactional ? "relayed again" : "re-sent by A",
                    payments - orders.size(), booked.runs(), booked.reruns(),
                    transactional ? " outbox rows left " + outboxLeft + ";" : "", IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(kills).as("kill -9s while the stream flowed").isGreaterThanOrEqualTo(MIN_KILLS);
            FaultHistory.assertNoneLostNorUnexpected(softly, booked);
            softly.assertThat(severalIds.size()).as("orders whose runs of A emitted different payment IDs: %s",
                    FaultHistory.first(severalIds)).isZero();
            softly.assertThat(paymentIds.keySet()).as("orders A emitted a payment for").isEqualTo(orders);
            if (transactional) {
                softly.assertThat(booked.duplicateEffects()).as("duplicate ledger rows in transactional mode").isZero();
                FaultHistory.assertNoneLostNorUnexpected(softly, seen);
                softly.assertThat(seen.duplicateEffects()).as("duplicate orders_seen rows").isZero();
                softly.assertThat(outboxLeft).as("rows left in the outbox table " + OUTBOX).isZero();
                // Beyond this, two relays would have published the same rows: SKIP LOCKED not sharing the work.
                softly.assertThat(payments - orders.size()).as("payments relayed again, at most a relay batch (%d)"
                        + " per kill", RELAY_BATCH).isLessThanOrEqualTo((long) RELAY_BATCH * kills);
            } else {
                softly.assertThat(booked.duplicateEffects()).as("duplicate ledger rows, at most B's max-in-flight per"
                        + " kill").isLessThanOrEqualTo(bound);
            }
            softly.assertAll();
        } finally {
            kafka.deleteTopic(ordersTopic);
            kafka.deleteTopic(paymentsTopic);
        }
    }

    /** Kills one process every {@link #KILL_EVERY}, in turn, and restarts it at once, until the stream is sent. */
    private static void killInTurnWhileTheStreamFlows(IdemCluster cluster, MessageStream stream)
            throws InterruptedException {
        for (int turn = 0; ; turn++) {
            long intervalStart = System.nanoTime();
            cluster.awaitUntil(() -> stream.done().isDone()
                    || System.nanoTime() - intervalStart >= KILL_EVERY.toNanos(), () -> "the next kill",
                    KILL_EVERY.plusMinutes(1));
            if (stream.done().isDone()) {
                return;
            }
            cluster.node(turn % NODES + 1).killAndRestart();
        }
    }

    /** The payment IDs each order's runs of A emitted, from the {@code sent-<pid>.log} files. */
    private static Map<String, Set<String>> paymentIdsPerOrder(Path runsDir) throws IOException {
        Map<String, Set<String>> ids = new TreeMap<>();
        if (!Files.isDirectory(runsDir)) {
            return ids;
        }
        try (Stream<Path> files = Files.list(runsDir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("sent-")).toList()) {
                String text = Files.readString(file, StandardCharsets.UTF_8);
                for (String line : text.substring(0, text.lastIndexOf('\n') + 1).split("\n")) {
                    String[] f = line.split("\t");
                    if (f.length == 4) {
                        ids.computeIfAbsent(f[0], k -> new TreeSet<>()).add(f[1]);
                    }
                }
            }
        }
        return ids;
    }

    /** How many records the topic holds (the adapter's producer is idempotent, not transactional: no markers). */
    private static long records(EmbeddedKafka kafka, String topic) {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        try {
            return kafka.admin().listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
                    .mapToLong(o -> o.offset()).sum();
        } catch (Exception e) {
            throw new IllegalStateException("Reading the end offsets of '" + topic + "' failed", e);
        }
    }

    private static long count(String jdbcUrl, String table) {
        try (Connection c = DriverManager.getConnection(jdbcUrl); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new AssertionError("Counting the rows of " + table + " failed: " + e, e);
        }
    }

    private String config(EmbeddedKafka kafka, String store, String ordersTopic, String paymentsTopic,
            boolean transactional, int port) {
        int concurrency = transactional ? TX_CONCURRENCY : CONCURRENCY;
        // A short session timeout, so each group notices a killed member quickly. Both pipelines take their key
        // from the message-id header (the default): the stream's IDs for A, the emitted IDs for B.
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: %s
                    group-id-prefix: "outbox-%s-"
                    client: { session.timeout.ms: 6000, heartbeat.interval.ms: 1000 }
                """.formatted(kafka.bootstrapServers(), run) + store + """
                pipelines:
                  orders:
                    source: %s
                    handler: %s
                    transactional: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 5s
                    retention: 10m
                  ledger:
                    source: %s
                    handler: %s
                    transactional: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 5s
                    retention: 10m
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(ordersTopic, OrderHandler.class.getName(), transactional, concurrency, MAX_IN_FLIGHT,
                paymentsTopic, LedgerHandler.class.getName(), transactional, concurrency, MAX_IN_FLIGHT, port);
    }
}
