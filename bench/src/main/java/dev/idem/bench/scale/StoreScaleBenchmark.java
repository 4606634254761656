package dev.idem.bench.scale;

import dev.idem.spi.DedupStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;

/**
 * How a shared dedup store's cost grows with the number of completed keys it holds: bytes per key, and the
 * latency and throughput of claims and completions, for each store and each size N given on the command line.
 *
 * <p>For each N, on an empty place of the run's own (Redis: a key prefix {@code idem-scale-<random>:}, whose keys
 * are deleted; PostgreSQL: a schema {@code idem_scale_<random>}, dropped and created again; MariaDB: a database of
 * that name), the store is created through its own provider ({@code DedupStoreProvider}, default settings but for
 * the place, table {@code idem_keys}) and filled with N completed keys through its SPI, exactly as {@code idem run}
 * writes them: {@code claim} of 1,000 fresh keys, then one {@code completeAll} of them, from 4 threads
 * ({@code -Didem.bench.fill-threads}); keys in namespace {@code orders} with a random UUID as ID, the SHA-256
 * fingerprint of a 100-byte payload (unpadded URL-safe Base64, as the runtime computes it), lease 30 s, retention
 * 7 days for claim and completion (the defaults). See {@link Workload}. With {@code -Didem.bench.fill=bulk} a store
 * that can fills faster than through its SPI ({@link ScaleStore#bulkFill}), for the largest N.
 *
 * <p>Size, measured before and after the fill: Redis, the server's {@code used_memory} ({@code INFO memory}, read
 * again until it stops moving, as Redis rehashes its key table incrementally); PostgreSQL,
 * {@code pg_total_relation_size} of the table (heap, primary key, {@code expires_at} index, TOAST) as written,
 * then again after {@code VACUUM (FULL, ANALYZE)} (the compact lower bound: as written, each key's claim left a dead
 * row version behind its completion, which autovacuum lets later writes reuse but never returns); MariaDB,
 * {@code data_length + index_length} after {@code ANALYZE TABLE}, then after {@code OPTIMIZE TABLE} (InnoDB's page
 * estimates). Printed: the fill's rate, the size before and after, bytes per key ((after − before) / N) and the
 * growth per million keys between consecutive Ns. {@code -Didem.bench.compact=false} skips the compaction.
 * {@code -Didem.bench.key-digest=sha256-128} stores each ID as {@code store.key-digest: sha256-128} would.
 *
 * <p>Calls, after the fill (and the compaction, then a plain {@code VACUUM (ANALYZE)} / {@code ANALYZE TABLE} as
 * autovacuum would have run by then; for N = 0 neither, as statistics of an empty table would mislead the planner
 * while the load fills it): for 20 s ({@code -Didem.bench.seconds}) per batch size, 4 threads
 * ({@code -Didem.bench.threads}) each claim a batch of 1 or of 100 fresh keys, then complete it (batch 1: one
 * {@code complete}, as with {@code commit.batch-size: 1}; batch 100: one {@code completeAll}), one batch after
 * the other. Every claim and every completion call is timed on its own (sorted arrays, nearest-rank percentiles).
 * Printed: calls, claim and completion p50 / p99 in milliseconds, keys per second (claimed and completed), and
 * that rate relative to the N = 0 run of the same store and batch size in the same invocation (to the smallest N
 * when 0 is not among them). The load adds its own fresh keys to the N already there. Before the first N, each
 * store is warmed up for 3 s per batch size ({@code -Didem.bench.warmup}, 0 for none) on a place that is then
 * removed.
 *
 * <p>Reading the ratios: on PostgreSQL a table that starts empty is itself slow while the load fills it (a few hot
 * index pages shared by every writer, statistics of an almost empty table): with batches of 1, N = 0 (and N = 1
 * or 2) ran at 1.2-1.6 k keys/s where N = 100,000 ran at 3.5-5 k, so ratios above 1 there are that, not keys
 * helping.
 *
 * <p>Stores: {@code redis} at {@code IDEM_BENCH_REDIS_URL} (default {@code redis://127.0.0.1:6379}; the server
 * should be otherwise idle, since {@code used_memory} is the whole server's), {@code postgresql} at
 * {@code IDEM_BENCH_POSTGRES_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test}, user postgres),
 * {@code mariadb} at {@code IDEM_BENCH_MARIADB_URL} (default {@code jdbc:mariadb://127.0.0.1:3306/test}, user
 * root). Everything the run wrote is removed at the end, also when it fails or is interrupted (a shutdown hook).
 *
 * <p>Run (after {@code mvn -q -B -pl bench -am package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.scale.StoreScaleBenchmark redis,postgresql 0,1000000}
 * <br>Arguments: the stores ({@code redis}, {@code postgresql}, {@code mariadb}; default {@code redis,postgresql})
 * and the sizes N (default {@code 0,1000000}; {@code 200k} and {@code 1m} are understood). A run of the defaults
 * takes about ten minutes on a 2-core machine, most of it PostgreSQL's fill.
 */
public final class StoreScaleBenchmark {

    private static final double SECONDS = Double.parseDouble(System.getProperty("idem.bench.seconds", "20"));
    private static final int THREADS = Integer.getInteger("idem.bench.threads", 4);
    private static final int FILL_THREADS = Integer.getInteger("idem.bench.fill-threads", 4);
    private static final double WARMUP = Double.parseDouble(System.getProperty("idem.bench.warmup", "3"));
    private static final boolean COMPACT = Boolean.parseBoolean(System.getProperty("idem.bench.compact", "true"));
    private static final boolean BULK_FILL = ScaleStore.bulkFillChosen();
    private static final List<String> PROPERTIES = List.of("idem.bench.seconds", "idem.bench.threads",
            "idem.bench.fill-threads", "idem.bench.warmup", "idem.bench.compact", "idem.bench.key-digest", "idem.bench.fill");
    private static final int[] BATCHES = {1, 100};
    private static final int WARMUP_KEYS = 20_000;

    private StoreScaleBenchmark() {
    }

    /** One N's sizes, in bytes; {@code compacted} -1 when not measured. */
    private record Size(long n, long fillNanos, long before, long after, long compacted) {
    }

    /** One N's timed calls at one batch size. */
    private record Load(long n, int batch, Workload.Timed timed) {
    }

    public static void main(String[] args) throws Exception {
        String stores = args.length > 0 ? args[0] : "redis,postgresql";
        String sizes = args.length > 1 ? args[1] : "0,1000000";
        List<Long> ns = parseSizes(sizes);
        System.out.printf("Store cost at scale: stores %s, N = %s; fill %d threads, batches of %,d; load %d threads,"
                + " %.0f s per batch size %s; key digest %s%n", stores, ns, FILL_THREADS, Workload.FILL_BATCH, THREADS,
                SECONDS, Arrays.toString(BATCHES), Workload.KEY_DIGEST.configValue());
        List<String> reports = new ArrayList<>();
        for (String name : stores.split(",")) {
            try (ScaleStore target = ScaleStore.of(name.trim())) {
                Thread cleanUp = new Thread(() -> dropQuietly(target));
                Runtime.getRuntime().addShutdownHook(cleanUp);
                try {
                    String report = measure(target, ns);
                    System.out.print(report);
                    reports.add(report);
                } finally {
                    target.drop();
                    Runtime.getRuntime().removeShutdownHook(cleanUp);
                }
            }
        }
        System.out.println();
        System.out.println("=== summary");
        reports.forEach(System.out::print);
        System.out.println();
        System.out.println("Reproduce: " + command(stores, sizes));
    }

    private static String measure(ScaleStore target, List<Long> ns) throws Exception {
        String name = target.name();
        if (WARMUP > 0) {
            try (DedupStore store = target.open()) {
                Workload.fill(store, WARMUP_KEYS, FILL_THREADS);
                for (int batch : BATCHES) {
                    Workload.load(store, batch, WARMUP, THREADS);
                }
            }
            System.out.printf("%s: warmed up (%,d keys filled, %.0f s of load per batch size)%n", name, WARMUP_KEYS,
                    WARMUP);
        }
        boolean compact = COMPACT && target.compaction() != null;
        List<Size> sizes = new ArrayList<>();
        List<Load> loads = new ArrayList<>();
        for (long n : ns) {
            try (DedupStore store = target.open()) {
                long before = target.size();
                long fillNanos = BULK_FILL ? target.bulkFill(store, n) : Workload.fill(store, n, FILL_THREADS);
                long after = target.size();
                // An empty table is neither compacted nor analyzed: statistics saying "empty" would steer the
                // planner to plans for an empty table while the load fills it (and autovacuum's next look may be
                // a minute away), which made N = 0 look 3-4 times slower than N = 100,000 on PostgreSQL.
                long compacted = !compact ? -1 : n == 0 ? after : target.compactedSize();
                if (n > 0) {
                    target.settle();
                }
                Size size = new Size(n, fillNanos, before, after, compacted);
                sizes.add(size);
                System.out.printf("%s N=%,d: filled in %.1f s (%,.0f keys/s); %,d -> %,d bytes%s%n", name, n,
                        fillNanos / 1e9, rate(n, fillNanos), before, after,
                        compacted < 0 ? "" : ", " + String.format(Locale.ROOT, "%,d", compacted) + " compacted");
                for (int batch : BATCHES) {
                    Workload.Timed timed = Workload.load(store, batch, SECONDS, THREADS);
                    loads.add(new Load(n, batch, timed));
                    System.out.printf("%s N=%,d batch %d: %,d claims, claim p50 %.3f p99 %.3f ms, completion p50 %.3f"
                            + " p99 %.3f ms, %,.0f keys/s%n", name, n, batch, timed.claims().count(),
                            timed.claims().millis(0.5), timed.claims().millis(0.99), timed.completions().millis(0.5),
                            timed.completions().millis(0.99), timed.keysPerSecond());
                }
            }
        }
        return sizeTable(target, sizes, compact) + loadTable(name, loads, ns.get(0));
    }

    private static String sizeTable(ScaleStore target, List<Size> sizes, boolean compact) {
        StringBuilder out = new StringBuilder();
        out.append(String.format("%n%s: size, %s%s; MB = 10^6 bytes%n", target.name(), target.sizeSource(),
                compact ? "; compacted: " + target.compaction() : ""));
        out.append(String.format("%12s %12s %10s %10s %10s %14s", "N", "fill keys/s", "before MB", "after MB",
                "bytes/key", "MB per 1M keys"));
        if (compact) {
            out.append(String.format(" %13s %10s %14s", "compacted MB", "bytes/key", "MB per 1M keys"));
        }
        out.append('\n');
        for (int i = 0; i < sizes.size(); i++) {
            Size s = sizes.get(i);
            Size previous = i > 0 ? sizes.get(i - 1) : null;
            out.append(String.format("%,12d %12s %10.2f %10.2f %10s %14s", s.n(),
                    s.n() == 0 ? "-" : String.format("%,.0f", rate(s.n(), s.fillNanos())), s.before() / 1e6,
                    s.after() / 1e6, perKey(s.after() - s.before(), s.n()),
                    previous == null ? "-" : perKey((s.after() - s.before()) - (previous.after() - previous.before()),
                            s.n() - previous.n())));
            if (compact) {
                out.append(String.format(" %13.2f %10s %14s", s.compacted() / 1e6, perKey(s.compacted() - s.before(),
                        s.n()), previous == null ? "-" : perKey((s.compacted() - s.before())
                        - (previous.compacted() - previous.before()), s.n() - previous.n())));
            }
            out.append('\n');
        }
        return out.toString();
    }

    private static String loadTable(String name, List<Load> loads, long baseN) {
        StringBuilder out = new StringBuilder();
        out.append(String.format("%s: store calls under load after the fill, %d threads, %.0f s per batch size, fresh"
                + " keys; latencies in ms; × = keys/s relative to N = %,d%n", name, THREADS, SECONDS, baseN));
        out.append(String.format("%12s %6s %10s %10s %10s %10s %10s %11s %6s%n", "N", "batch", "calls", "claim p50",
                "claim p99", "compl p50", "compl p99", "keys/s", "×"));
        for (Load load : loads) {
            Workload.Timed t = load.timed();
            double base = loads.stream().filter(l -> l.n() == baseN && l.batch() == load.batch()).findFirst()
                    .orElseThrow().timed().keysPerSecond();
            out.append(String.format("%,12d %6d %,10d %10.3f %10.3f %10.3f %10.3f %,11.0f %6.2f%n", load.n(),
                    load.batch(), t.claims().count(), t.claims().millis(0.5), t.claims().millis(0.99),
                    t.completions().millis(0.5), t.completions().millis(0.99), t.keysPerSecond(),
                    t.keysPerSecond() / base));
        }
        return out.toString();
    }

    /** Bytes per key, or growth per million keys in MB (the same number), to one decimal; "-" for no keys. */
    private static String perKey(long bytes, long keys) {
        return keys <= 0 ? "-" : String.format("%.1f", (double) bytes / keys);
    }

    private static double rate(long keys, long nanos) {
        return keys / (nanos / 1e9);
    }

    /** "0,200k,1m" as ascending distinct sizes. */
    public static List<Long> parseSizes(String list) {
        TreeSet<Long> sizes = new TreeSet<>();
        for (String part : list.split(",")) {
            String s = part.trim().replace("_", "").toLowerCase(Locale.ROOT);
            long unit = s.endsWith("k") ? 1_000 : s.endsWith("m") ? 1_000_000 : 1;
            long n = Long.parseLong(unit == 1 ? s : s.substring(0, s.length() - 1)) * unit;
            if (n < 0) {
                throw new IllegalArgumentException("A size cannot be negative: " + part);
            }
            sizes.add(n);
        }
        if (sizes.isEmpty()) {
            throw new IllegalArgumentException("No sizes in " + list);
        }
        return new ArrayList<>(sizes);
    }

    private static String command(String stores, String sizes) {
        StringBuilder command = new StringBuilder("java");
        for (String property : PROPERTIES) {
            String value = System.getProperty(property);
            if (value != null) {
                command.append(" -D").append(property).append('=').append(value);
            }
        }
        return command.append(" -cp bench/target/benchmarks.jar ").append(StoreScaleBenchmark.class.getName())
                .append(' ').append(stores).append(' ').append(sizes).toString();
    }

    private static void dropQuietly(ScaleStore target) {
        try {
            target.drop();
        } catch (Exception e) {
            System.err.println("Could not remove the keys of " + target.name() + ": " + e);
        }
    }
}
