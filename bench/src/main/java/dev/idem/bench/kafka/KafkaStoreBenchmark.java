package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.testkit.TestPluginConfig;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.function.UnaryOperator;

/**
 * End-to-end rate of Idem on a shared store, with completions batched ({@code commit.*} defaults) and one
 * by one ({@code commit.batch-size: 1}), against the raw {@code KafkaConsumer} of
 * {@link KafkaEndToEndBenchmark} (a {@code HashSet} of seen IDs, {@code commitSync} per poll) and against
 * Apache Camel 4.17's idempotent consumer on the same store, in one run on one embedded broker: 4 partitions,
 * 100-byte records over 1,024 record keys, 10 % of them repeating an earlier record's ID. A no-op handler,
 * the default pipeline settings otherwise. Each Idem run uses a fresh key prefix or table, so no run sees
 * another's keys. Runs alternate; prints every run, then medians and ratios.
 *
 * <p>The Camel side runs in a JVM of its own ({@link CamelProcess}, module {@code bench/camel}), warm across
 * rounds as Idem's side is: a camel-kafka route ({@code consumersCount} 4, one Kafka consumer per partition,
 * camel-kafka's defaults otherwise: auto-commit, 500 records a poll) through {@code idempotentConsumer} on the
 * {@code message-id} header around a no-op processor, on camel-spring-redis's
 * {@code SpringRedisIdempotentRepository} (one Redis set per run) or camel-sql's
 * {@code JdbcMessageIdRepository} (table {@code CAMEL_MESSAGEPROCESSED}, a processor name per run, a HikariCP
 * pool). It is timed from the first record into the route to the last one out, duplicates included; each
 * run's set or rows are deleted after it.
 *
 * <p>Stores: {@code redis} at {@code IDEM_BENCH_REDIS_URL} (default {@code redis://127.0.0.1:6379}),
 * {@code postgresql} at {@code IDEM_BENCH_POSTGRES_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test},
 * user postgres).
 *
 * <p>Run (after {@code mvn -q -B -pl bench -am package -DskipTests}, which also builds
 * {@code bench/target/camel.jar}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaStoreBenchmark [store=redis]
 * [messages=100000] [rounds=3]}; {@code -Didem.bench.sides=raw,idem-batched} runs only those sides (of {@code raw},
 * {@code idem-batched}, {@code idem-per-key}, {@code camel}).
 */
public final class KafkaStoreBenchmark {

    private static final int PARTITIONS = 4;
    private static final int DUPLICATE_PERCENT = 10;
    /**
     * Long enough for a run; the keys then leave the shared Redis on their own. Pipeline settings of both Idem sides
     * can be added with {@code -Didem.bench.settings="max-in-flight: 4000"} (YAML lines, {@code \n} between them).
     */
    private static final String KEEP_KEYS = "retention: 10m"
            + System.getProperty("idem.bench.settings", "").replace("\\n", "\n").transform(s -> s.isEmpty() ? s : "\n" + s);
    private static final String POSTGRES_URL = System.getenv().getOrDefault("IDEM_BENCH_POSTGRES_URL",
            "jdbc:postgresql://127.0.0.1:5432/test");
    private static final String REDIS_URL = System.getenv().getOrDefault("IDEM_BENCH_REDIS_URL",
            "redis://127.0.0.1:6379");

    private KafkaStoreBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        String store = args.length > 0 ? args[0] : "redis";
        String storeType = store.equals("postgresql") ? "jdbc" : store;
        String storeSection = store.equals("postgresql") ? "{ type: jdbc, jdbc: { url: \"" + POSTGRES_URL + "\" } }"
                : "{ type: " + storeType + " }";
        int messages = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        int distinct = messages - KafkaEndToEndBenchmark.repeatCount(messages, DUPLICATE_PERCENT);
        System.out.printf("Kafka + %s store end-to-end: %,d records per run (%,d distinct IDs), %d partitions,"
                + " %d rounds%n", store, messages, distinct, PARTITIONS, rounds);
        if (!store.equals("redis") && !store.equals("postgresql")) {
            throw new IllegalArgumentException("store must be redis or postgresql, not " + store);
        }
        try (EmbeddedKafka kafka = EmbeddedKafka.start();
                CamelProcess camel = CamelProcess.start(kafka.bootstrapServers(), PARTITIONS, store,
                        store.equals("postgresql") ? POSTGRES_URL : REDIS_URL, "postgres")) {
            String topic = "store-bench";
            kafka.createTopic(topic, PARTITIONS);
            KafkaEndToEndBenchmark.fill(kafka, topic, messages, DUPLICATE_PERCENT);
            Map<String, Side> sides = new LinkedHashMap<>();
            sides.put("raw", run -> EndToEnd.rate(messages,
                    KafkaEndToEndBenchmark.raw(kafka, topic, messages, distinct, run)));
            sides.put("idem-batched", run -> EndToEnd.rate(messages, KafkaBench.timeIdem(kafka,
                    "batched-" + run, topic, KEEP_KEYS, messages, (m, c) -> { }, storeType, storeSection,
                    store(store, run))));
            sides.put("idem-per-key", run -> EndToEnd.rate(messages, KafkaBench.timeIdem(kafka,
                    "per-key-" + run, topic, KEEP_KEYS + "\ncommit: { batch-size: 1 }", messages, (m, c) -> { }, storeType,
                    storeSection, store(store, run))));
            sides.put("camel", run -> {
                String unique = "camel-bench" + ProcessHandle.current().pid() + "r" + run;
                CamelProcess.Result result = camel.run(topic, unique, messages, unique);
                if (result.processed() != distinct || result.duplicates() != messages - distinct) {
                    throw new IllegalStateException("Camel processed " + result.processed() + " and skipped "
                            + result.duplicates() + " as duplicates; expected " + distinct + " and "
                            + (messages - distinct));
                }
                return EndToEnd.rate(messages, result.nanos());
            });
            String only = System.getProperty("idem.bench.sides");
            if (only != null) {
                sides.keySet().retainAll(List.of(only.split(",")));
            }
            Map<String, List<Double>> rates = EndToEnd.alternate(store, 0, rounds, sides);
            double raw = median(rates, "raw");
            double batched = median(rates, "idem-batched");
            double perKey = median(rates, "idem-per-key");
            double camelRate = median(rates, "camel");
            System.out.println("--- medians over " + rounds + " rounds of " + messages + " messages");
            if (store.equals("postgresql")) {
                dropTables(rounds * sides.size());
            }
            System.out.printf("%s: raw %,.0f msg/s; idem batched %,.0f msg/s (%.2f× raw); idem per key %,.0f msg/s"
                    + " (%.2f× raw); batched/per-key %.2f%n", store, raw, batched, batched / raw, perKey,
                    perKey / raw, batched / perKey);
            System.out.printf("%s: camel %,.0f msg/s (%.2f× raw); idem batched %.2f× camel; idem per key %.2f×"
                    + " camel%n", store, camelRate, camelRate / raw, batched / camelRate, perKey / camelRate);
        }
    }

    /** The median of a side's rounds; NaN for a side left out with {@code -Didem.bench.sides}. */
    private static double median(Map<String, List<Double>> rates, String side) {
        return rates.containsKey(side) ? EndToEnd.median(rates.get(side)) : Double.NaN;
    }

    private static DedupStore store(String type, int run) {
        String unique = "bench" + ProcessHandle.current().pid() + "r" + run;
        return switch (type) {
            case "redis" -> create("redis", config -> config
                    .with("uri", REDIS_URL)
                    .with("key-prefix", unique + ":"));
            case "postgresql" -> create("jdbc", config -> config
                    .with("url", POSTGRES_URL)
                    .with("username", "postgres")
                    .with("table", table(run)));
            default -> throw new IllegalArgumentException("store must be redis or postgresql, not " + type);
        };
    }

    /** The tables of the PostgreSQL runs: each Idem run had its own, numbered as the runs are. */
    private static void dropTables(int runs) throws SQLException {
        try (Connection c = DriverManager.getConnection(POSTGRES_URL, "postgres", "");
                Statement statement = c.createStatement()) {
            for (int run = 0; run < runs; run++) {
                statement.execute("DROP TABLE IF EXISTS " + table(run));
            }
        }
    }

    private static String table(int run) {
        return "idem_bench" + ProcessHandle.current().pid() + "r" + run;
    }

    private static DedupStore create(String id, UnaryOperator<TestPluginConfig> settings) {
        DedupStoreProvider provider = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals(id)).findFirst().orElseThrow();
        return provider.create(settings.apply(TestPluginConfig.defaults("store." + id, provider.configSpec())),
                StoreContext.system());
    }
}
