package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.api.MessageHandler;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.testkit.TestPluginConfig;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * Transactional mode end to end on PostgreSQL, with {@code transactional.group} 1, 10 and 100: each message's
 * handler inserts one business row through the store's transaction, and the key is recorded in that same
 * transaction (grouped: up to N messages per transaction, each under a savepoint). Against the raw
 * {@code KafkaConsumer} of {@link KafkaEndToEndBenchmark} in the same run, on one embedded broker: 4 partitions,
 * 100-byte records, 10 % of them repeating an earlier record's ID, {@code concurrency: 4}. Each Idem run has a
 * table of its own; every business table must end with one row per distinct ID, checked after each run. Runs
 * alternate; prints every run, then medians and ratios.
 *
 * <p>PostgreSQL at {@code IDEM_BENCH_POSTGRES_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test}, user
 * postgres). Run (after {@code mvn -q -B -pl bench -am package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaTransactionalBenchmark [messages=100000]
 * [rounds=3]}; {@code -Didem.bench.groups=10,100} runs other group sizes,
 * {@code -Didem.bench.savepoints=per-message,on-failure} runs each group above 1 with each
 * {@code transactional.savepoints}, {@code -Didem.bench.settings=...} adds pipeline settings (YAML lines, {@code \n}
 * between them).
 */
public final class KafkaTransactionalBenchmark {

    private static final int PARTITIONS = 4;
    private static final int DUPLICATE_PERCENT = 10;
    /** The group sizes to run, {@code -Didem.bench.groups=1,10,100} by default; the first is the reference. */
    private static final int[] GROUPS = Arrays.stream(System.getProperty("idem.bench.groups", "1,10,100")
            .split(",")).mapToInt(Integer::parseInt).toArray();
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
            for (int group : GROUPS) {
                for (String savepoints : group == 1 ? List.of("per-message") : SAVEPOINTS) {
                    String variant = variant(group, savepoints);
                    variants.add(variant);
                    sides.put(variant, run -> {
                        String table = "idem_txbench" + ProcessHandle.current().pid() + "r" + runs[0]++;
                        String business = table + "_business";
                        execute("CREATE TABLE " + business + " (id text NOT NULL, payload bytea NOT NULL)");
                        try {
                            MessageHandler handler = (message, context) -> {
                                Connection c = context.transaction(Connection.class).orElseThrow();
                                try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + business
                                        + " (id, payload) VALUES (?, ?)")) {
                                    insert.setString(1, message.idempotencyKey().orElseThrow());
                                    insert.setBytes(2, message.payload());
                                    insert.executeUpdate();
                                }
                            };
                            long nanos = KafkaBench.timeIdem(kafka, "tx-" + group + "-" + run, topic,
                                    "transactional: true\ntransactional.group: " + group
                                            + (group == 1 ? "" : "\ntransactional.savepoints: " + savepoints)
                                            + "\nretention: 10m" + EXTRA,
                                    messages, handler, "jdbc", storeSection, store(table));
                            long rows = count(business);
                            if (rows != distinct) {
                                throw new IllegalStateException(variant + ": " + rows + " business rows for "
                                        + distinct + " distinct IDs");
                            }
                            return EndToEnd.rate(messages, nanos);
                        } finally {
                            for (String t : List.of(business, table, table + "_outbox", table + "_seq")) {
                                execute("DROP TABLE IF EXISTS " + t);
                            }
                        }
                    });
                }
            }
            Map<String, List<Double>> rates = EndToEnd.alternate("postgresql-transactional", 0, rounds, sides);
            double raw = EndToEnd.median(rates.get("raw"));
            System.out.println("--- medians over " + rounds + " rounds of " + messages + " messages");
            double first = EndToEnd.median(rates.get(variants.get(0)));
            for (String variant : variants) {
                double rate = EndToEnd.median(rates.get(variant));
                System.out.printf("%s: %,.0f msg/s (%.3f× raw, %.2f× %s)%n", variant, rate, rate / raw, rate / first,
                        variants.get(0));
            }
            System.out.printf("raw: %,.0f msg/s%n", raw);
        }
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

    private static long count(String table) throws SQLException {
        try (Connection c = DriverManager.getConnection(POSTGRES_URL, "postgres", "");
                Statement statement = c.createStatement();
                ResultSet rs = statement.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
