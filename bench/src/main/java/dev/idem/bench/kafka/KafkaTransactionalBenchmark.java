package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.api.BatchHandler;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.testkit.TestPluginConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Transactional mode end to end on PostgreSQL, with {@code transactional.group} 1, its default (10) and 100: each message's
 * handler inserts one business row through the store's transaction, and the key is recorded in that same
 * transaction (grouped: up to N messages per transaction, each under a savepoint). Beside them a batch handler
 * ({@link BatchHandler}, {@code batch.size: 100}, {@code batch.linger: 5ms}) that inserts its whole batch with one
 * JDBC batch ({@code addBatch} / {@code executeBatch}) on the batch's one transaction, which also records its
 * keys. Against the raw {@code KafkaConsumer} of {@link KafkaEndToEndBenchmark} in the same run, on one embedded
 * broker: 4 partitions, 100-byte records, 10 % of them repeating an earlier record's ID, {@code concurrency: 4}.
 * Each Idem run has tables of its own, dropped after it (the store's side tables too); every business table must
 * end with one row per distinct ID (as many rows as distinct IDs, no ID twice), checked after each run. Runs
 * alternate; prints every run, then medians and ratios.
 *
 * <p>PostgreSQL at {@code IDEM_BENCH_POSTGRES_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test}, user
 * postgres). Run (after {@code mvn -q -B -pl bench -am package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaTransactionalBenchmark [messages=100000]
 * [rounds=3]}; {@code -Didem.bench.groups=1,default,10,100} runs other group sizes, {@code -Didem.bench.batches=10,100}
 * other batch sizes ({@code -Didem.bench.batches=} none), {@code -Didem.bench.linger=5ms} another
 * {@code batch.linger},
 * {@code -Didem.bench.savepoints=per-message,on-failure} runs each group above 1 with each
 * {@code transactional.savepoints}, {@code -Didem.bench.settings=...} adds pipeline settings (YAML lines, {@code \n}
 * between them).
 */
public final class KafkaTransactionalBenchmark {

    private static final int PARTITIONS = 4;
    private static final int DUPLICATE_PERCENT = 10;
    /**
     * The group sizes to run, {@code -Didem.bench.groups=1,default,100} by default; the first is the reference.
     * {@code default} sets neither {@code transactional.group} nor {@code transactional.savepoints}: transactional mode
     * as a user gets it without tuning.
     */
    private static final String[] GROUPS = System.getProperty("idem.bench.groups", "1,default,100").split(",");
    /** The {@code batch.size} of each batch-handler variant, {@code -Didem.bench.batches=100} by default. */
    private static final int[] BATCHES = Arrays.stream(System.getProperty("idem.bench.batches", "100").split(","))
            .map(String::trim).filter(size -> !size.isEmpty()).mapToInt(Integer::parseInt).toArray();
    /** The {@code batch.linger} of the batch-handler variants. */
    private static final String LINGER = System.getProperty("idem.bench.linger", "5ms");
    /** The {@code transactional.savepoints} values each group above 1 runs with. */
    private static final List<String> SAVEPOINTS = List.of(System.getProperty("idem.bench.savepoints", "per-message")
            .split(","));
    private static final String POSTGRES_URL = System.getenv().getOrDefault("IDEM_BENCH_POSTGRES_URL",
            "jdbc:postgresql://127.0.0.1:5432/test");

    private static final String EXTRA = System.getProperty("idem.bench.settings", "").replace("\\n", "\n")
            .transform(extra -> extra.isEmpty() ? extra : "\n" + extra);

    private KafkaTransactionalBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int distinct = messages - KafkaEndToEndBenchmark.repeatCount(messages, DUPLICATE_PERCENT);
        System.out.printf("Kafka + PostgreSQL transactional end-to-end: %,d records per run (%,d distinct IDs), %d"
                + " partitions, one business insert per message, %d rounds%n", messages, distinct, PARTITIONS, rounds);
        String storeSection = "{ type: jdbc, jdbc: { url: \"" + POSTGRES_URL + "\" } }";
        int[] runs = {0};
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            String topic = "tx-bench";
            kafka.createTopic(topic, PARTITIONS);
            KafkaEndToEndBenchmark.fill(kafka, topic, messages, DUPLICATE_PERCENT);
            Map<String, Side> sides = new LinkedHashMap<>();
            sides.put("raw", run -> EndToEnd.rate(messages,
                    KafkaEndToEndBenchmark.raw(kafka, topic, messages, distinct, run)));
            List<String> variants = new ArrayList<>();
            for (String group : GROUPS) {
                boolean defaults = group.trim().equals("default");
                int size = defaults ? 0 : Integer.parseInt(group.trim());
                for (String savepoints : size <= 1 ? List.of("per-message") : SAVEPOINTS) {
                    String variant = defaults ? "defaults" : variant(size, savepoints);
                    variants.add(variant);
                    String settings = "transactional: true"
                            + (defaults ? "" : "\ntransactional.group: " + size)
                            + (size <= 1 ? "" : "\ntransactional.savepoints: " + savepoints)
                            + "\nretention: 10m" + EXTRA;
                    sides.put(variant, run -> measure(variant, messages, distinct, runs, (table, business) -> {
                        MessageHandler handler = (message, context) -> {
                            Connection c = context.transaction(Connection.class).orElseThrow();
                            try (PreparedStatement insert = c.prepareStatement(insert(business))) {
                                insert.setString(1, message.idempotencyKey().orElseThrow());
                                insert.setBytes(2, message.payload());
                                insert.executeUpdate();
                            }
                        };
                        return KafkaBench.timeIdem(kafka, "tx-" + (defaults ? "default" : size) + "-" + run, topic, settings, messages,
                                handler, "jdbc", storeSection, store(table));
                    }));
                }
            }
            for (int size : BATCHES) {
                String variant = "batch-" + size;
                variants.add(variant);
                String settings = "transactional: true\nbatch.size: " + size + "\nbatch.linger: " + LINGER
                        + "\nretention: 10m" + EXTRA;
                sides.put(variant, run -> measure(variant, messages, distinct, runs, (table, business) -> {
                    AtomicLong calls = new AtomicLong();
                    AtomicLong inserted = new AtomicLong();
                    BatchHandler handler = (batch, context) -> {
                        Connection c = context.transaction(Connection.class).orElseThrow();
                        try (PreparedStatement insert = c.prepareStatement(insert(business))) {
                            for (Message message : batch) {
                                insert.setString(1, message.idempotencyKey().orElseThrow());
                                insert.setBytes(2, message.payload());
                                insert.addBatch();
                            }
                            insert.executeBatch();
                        }
                        calls.incrementAndGet();
                        inserted.addAndGet(batch.size());
                    };
                    long nanos = timeBatches(kafka, "txb-" + size + "-" + run, topic, settings, messages, handler,
                            storeSection, store(table));
                    System.out.printf("  %s: %,d handler calls, %.1f messages a call%n", variant, calls.get(),
                            (double) inserted.get() / Math.max(1, calls.get()));
                    return nanos;
                }));
            }
            Map<String, List<Double>> rates = EndToEnd.alternate("postgresql-transactional", 0, rounds, sides);
            double raw = EndToEnd.median(rates.get("raw"));
            System.out.println("--- medians over " + rounds + " rounds of " + messages + " messages");
            double first = EndToEnd.median(rates.get(variants.get(0)));
            for (String variant : variants) {
                double rate = EndToEnd.median(rates.get(variant));
                System.out.printf("%s: %,.0f msg/s (%.3f× raw, %.2f× %s", variant, rate, rate / raw, rate / first,
                        variants.get(0));
                // A batch of N against transactions of N messages with one insert each.
                String group = variant.startsWith("batch-") ? "group-" + variant.substring("batch-".length()) : null;
                if (group != null && rates.containsKey(group) && !group.equals(variants.get(0))) {
                    System.out.printf(", %.2f× %s", rate / EndToEnd.median(rates.get(group)), group);
                }
                System.out.println(")");
            }
            System.out.printf("raw: %,.0f msg/s%n", raw);
        }
    }

    /** What times one variant's run: given its store table and its business table, the run's nanoseconds. */
    @FunctionalInterface
    private interface Timed {
        long nanos(String table, String business) throws Exception;
    }

    /**
     * One run of a variant on tables of its own: creates the business table, times the run, checks that it holds
     * one row per distinct ID, drops the run's tables.
     *
     * @return messages per second
     */
    private static double measure(String variant, int messages, int distinct, int[] runs, Timed timed)
            throws Exception {
        String table = "idem_txbench" + ProcessHandle.current().pid() + "r" + runs[0]++;
        String business = table + "_business";
        execute("CREATE TABLE " + business + " (id text NOT NULL, payload bytea NOT NULL)");
        try {
            long nanos = timed.nanos(table, business);
            long[] rows = count(business);
            if (rows[0] != distinct || rows[1] != distinct) {
                throw new IllegalStateException(variant + ": " + rows[0] + " business rows (" + rows[1]
                        + " distinct IDs) for " + distinct + " distinct IDs");
            }
            return EndToEnd.rate(messages, nanos);
        } finally {
            dropTables(table);
        }
    }

    /** Drops {@code table} and every table named {@code table_...}: the business table and the store's side tables. */
    private static void dropTables(String table) throws SQLException {
        List<String> tables = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(POSTGRES_URL, "postgres", "");
                PreparedStatement list = c.prepareStatement("SELECT tablename FROM pg_tables"
                        + " WHERE schemaname = current_schema() AND starts_with(tablename, ?)")) {
            list.setString(1, table);
            try (ResultSet rs = list.executeQuery()) {
                while (rs.next()) {
                    String name = rs.getString(1);
                    if (name.equals(table) || name.startsWith(table + "_")) {
                        tables.add(name);
                    }
                }
            }
        }
        if (!tables.isEmpty()) {
            execute("DROP TABLE IF EXISTS " + String.join(", ", tables));
        }
    }

    private static String insert(String business) {
        return "INSERT INTO " + business + " (id, payload) VALUES (?, ?)";
    }

    /**
     * As {@link KafkaBench#timeIdem} on the JDBC store, for a batch handler: {@code EndToEnd.timeIdem} wraps its
     * handler in a {@code MessageHandler}, which would hide the {@link BatchHandler}, so the run is timed here the
     * same way (from the first handler call to the last message settled, processed or duplicate).
     */
    private static long timeBatches(EmbeddedKafka kafka, String pipeline, String topic, String settings, int settled,
            BatchHandler handler, String storeSection, DedupStore store) throws Exception {
        BrokerAdapter adapter = KafkaBench.adapter(kafka);
        String yaml = """
                broker: { type: kafka, kafka: { bootstrap-servers: [%s] } }
                store: %s
                pipelines:
                  %s:
                    source: %s
                """.formatted(kafka.bootstrapServers(), storeSection, pipeline, topic) + settings.indent(4);
        try {
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            AtomicLong first = new AtomicLong();
            IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of()).broker("kafka", adapter)
                    .store("jdbc", store).meterRegistry(meters)
                    .handler(pipeline, (BatchHandler) (batch, context) -> {
                        if (first.get() == 0) {
                            first.compareAndSet(0, System.nanoTime());
                        }
                        handler.handle(batch, context);
                    })
                    .start();
            try {
                List<Counter> outcomes = List.of();
                while (total(outcomes) < settled) {
                    Thread.sleep(1);
                    if (outcomes.size() < 2) {
                        outcomes = meters.find("idem.messages").tag("pipeline", pipeline)
                                .tag("outcome", outcome -> outcome.equals("processed") || outcome.equals("duplicate"))
                                .counters().stream().toList();
                    }
                }
                return System.nanoTime() - first.get();
            } finally {
                runtime.stop(Duration.ofSeconds(10));
            }
        } finally {
            adapter.close();
            store.close();
        }
    }

    private static double total(List<Counter> counters) {
        double sum = 0;
        for (Counter c : counters) {
            sum += c.count();
        }
        return sum;
    }

    private static String variant(int group, String savepoints) {
        return "group-" + group + (savepoints.equals("per-message") ? "" : " " + savepoints);
    }

    private static DedupStore store(String table) {
        DedupStoreProvider provider = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("jdbc")).findFirst().orElseThrow();
        return provider.create(TestPluginConfig.defaults("store.jdbc", provider.configSpec())
                .with("url", POSTGRES_URL).with("username", "postgres").with("table", table), StoreContext.system());
    }

    private static void execute(String sql) throws SQLException {
        try (Connection c = DriverManager.getConnection(POSTGRES_URL, "postgres", "");
                Statement statement = c.createStatement()) {
            statement.execute(sql);
        }
    }

    /** The rows of {@code table} and its distinct IDs. */
    private static long[] count(String table) throws SQLException {
        try (Connection c = DriverManager.getConnection(POSTGRES_URL, "postgres", "");
                Statement statement = c.createStatement();
                ResultSet rs = statement.executeQuery("SELECT COUNT(*), COUNT(DISTINCT id) FROM " + table)) {
            rs.next();
            return new long[] {rs.getLong(1), rs.getLong(2)};
        }
    }
}
