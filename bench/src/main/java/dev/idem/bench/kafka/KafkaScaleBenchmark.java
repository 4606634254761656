package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.scale.ScaleStore;
import dev.idem.bench.scale.StoreScaleBenchmark;
import dev.idem.spi.DedupStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The end-to-end Kafka pipeline on a shared store that already holds N completed keys, against the same pipeline
 * on the same store at the smallest N (issue 30 §1): what a store holding a week of keys costs the pipeline.
 *
 * <p>For each store, one place of the run's own (a Redis key prefix, a PostgreSQL schema, a MariaDB database; see
 * {@link dev.idem.bench.scale.StoreScaleBenchmark}) is filled up to each N in turn through the store's SPI, as
 * {@code idem run} writes keys (UUID IDs, SHA-256 fingerprints, 7 days; claims of 1,000 and one {@code completeAll}
 * each, 4 threads), then {@code VACUUM (ANALYZE)} / {@code ANALYZE TABLE} as autovacuum would have run by then. At
 * each N the pipeline runs {@code rounds} times over one embedded broker's topic (4 partitions, 100-byte records,
 * 10 % repeated IDs, no-op handler, the default pipeline settings and {@code retention: 10m}), each run a pipeline
 * of its own name, hence a consumer group and a namespace of its own, on a store of the same place: its lookups go
 * through the N keys' table and index, or the server's key table, as a pipeline's do in production. One run before
 * the first N warms the JVM and is not counted.
 *
 * <p>Printed: each fill's bytes per key (the size before and after it, as {@code StoreScaleBenchmark} measures
 * size, as written), each run's rate, then per N the median and its ratio to the smallest N's median.
 *
 * <p>With {@code -Didem.bench.fill=bulk}, a store that can fills faster than its SPI ({@link ScaleStore#bulkFill}:
 * PostgreSQL generates the rows itself, in the SPI's format, checked), for the sizes the SPI would take hours to
 * reach; its bytes per key are then those of a table without the dead row versions a claim and its completion
 * leave.
 *
 * <p>Run: {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaScaleBenchmark redis,postgresql
 * 0,1m,10m 100000 3}. Arguments: the stores ({@code redis}, {@code postgresql}, {@code mariadb}), the sizes N
 * ({@code 200k}, {@code 1m} understood), the records per run and the rounds per N.
 */
public final class KafkaScaleBenchmark {

    private static final int PARTITIONS = 4;
    private static final int DUPLICATE_PERCENT = 10;
    private static final boolean BULK_FILL = ScaleStore.bulkFillChosen();

    private KafkaScaleBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        String stores = args.length > 0 ? args[0] : "redis,postgresql";
        List<Long> ns = StoreScaleBenchmark.parseSizes(args.length > 1 ? args[1] : "0,1000000");
        int messages = args.length > 2 ? Integer.parseInt(args[2]) : 100_000;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        System.out.printf("Kafka end to end on a store holding N completed keys: stores %s, N = %s; %,d records per"
                + " run, %d partitions, %d %% repeats, %d rounds per N%n", stores, ns, messages, PARTITIONS,
                DUPLICATE_PERCENT, rounds);
        List<String> summaries = new ArrayList<>();
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            String topic = "scale-bench";
            kafka.createTopic(topic, PARTITIONS);
            KafkaEndToEndBenchmark.fill(kafka, topic, messages, DUPLICATE_PERCENT);
            for (String name : stores.split(",")) {
                summaries.add(measure(kafka, topic, name.trim(), ns, messages, rounds));
            }
        }
        System.out.println();
        System.out.println("=== summary");
        summaries.forEach(System.out::print);
        System.out.printf("Reproduce: java%s -cp bench/target/benchmarks.jar %s %s %s %d %d%n",
                BULK_FILL ? " -Didem.bench.fill=bulk" : "", KafkaScaleBenchmark.class.getName(), stores, args.length > 1 ? args[1] : "0,1000000", messages, rounds);
    }

    private static String measure(EmbeddedKafka kafka, String topic, String name, List<Long> ns, int messages,
            int rounds) throws Exception {
        StringBuilder summary = new StringBuilder(String.format("%s: Idem msg/s by N, medians of %d runs; × against"
                + " N = %,d%n", name, rounds, ns.get(0)));
        summary.append(String.format("%12s %12s %6s   %s%n", "N", "msg/s", "×", "runs"));
        try (ScaleStore target = ScaleStore.of(name)) {
            Thread cleanUp = new Thread(() -> {
                try {
                    target.drop();
                } catch (Exception e) {
                    System.err.println("Could not remove the keys of " + name + ": " + e);
                }
            });
            Runtime.getRuntime().addShutdownHook(cleanUp);
            try (DedupStore filler = target.open()) {
                String storeType = name.equals("redis") ? "redis" : "jdbc";
                int[] run = {0};
                Run pipeline = () -> EndToEnd.rate(messages, KafkaBench.timeIdem(kafka,
                        "scale-" + name + ProcessHandle.current().pid() + "r" + run[0]++, topic, "retention: 10m", messages,
                        (m, c) -> { }, storeType, target.storeSection(), target.another()));
                System.out.printf("%s: warm-up run %,.0f msg/s%n", name, pipeline.rate());
                long filled = 0;
                double base = Double.NaN;
                for (long n : ns) {
                    if (n > filled) {
                        long before = target.size();
                        long nanos = BULK_FILL ? target.bulkFill(filler, n - filled)
                                : ScaleStore.fill(filler, n - filled);
                        long after = target.size();
                        System.out.printf("%s: filled %,d keys in %.1f s (%s); %,d -> %,d bytes, %.1f bytes per key"
                                + " (%s)%n", name, n - filled, nanos / 1e9,
                                BULK_FILL ? target.bulkFillNote() : "through the SPI", before, after,
                                (double) (after - before) / (n - filled), target.sizeSource());
                        filled = n;
                        target.settle();
                    }
                    List<Double> rates = new ArrayList<>();
                    for (int r = 0; r < rounds; r++) {
                        double rate = pipeline.rate();
                        rates.add(rate);
                        System.out.printf("%s N=%,d run %d: %,.0f msg/s%n", name, n, r + 1, rate);
                    }
                    double median = EndToEnd.median(rates);
                    if (Double.isNaN(base)) {
                        base = median;
                    }
                    StringBuilder each = new StringBuilder();
                    for (double rate : rates) {
                        each.append(String.format(Locale.ROOT, "%s%,.0f", each.length() == 0 ? "" : ", ", rate));
                    }
                    summary.append(String.format("%,12d %,12.0f %6.2f   %s%n", n, median, median / base, each));
                }
            } finally {
                target.drop();
                Runtime.getRuntime().removeShutdownHook(cleanUp);
            }
        }
        System.out.print(summary);
        return summary.toString();
    }

    @FunctionalInterface
    private interface Run {
        double rate() throws Exception;
    }
}
