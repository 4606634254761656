package dev.idem.bench.soak;

import dev.idem.adapter.kafka.EmbeddedKafka;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A soak of the built distribution: {@code bin/idem run} consuming Kafka (an embedded single-node KRaft broker in this
 * JVM, 4 partitions) for a long time at a steady share of the throughput it was measured at, with a {@code kill -9}
 * (and an immediate restart) every few minutes, for each of two setups: the Redis store in plain mode, and the JDBC
 * store on PostgreSQL in transactional mode (groups of 10). Not part of the build's tests: run it by hand, as
 * {@code bench/soak/soak.sh} does (README, "Benchmarks").
 *
 * <p>For each setup: a calibration run drains a pre-filled topic ({@code --calibration} messages) and measures the
 * median throughput per second; the soak then publishes at {@code --load} (70 %) of it for {@code --duration} (30
 * minutes), killing the process every {@code --kill-every} (5 minutes). Every {@code --sample-every} (a minute) it
 * samples the process: heap after the last GC and live threads (JMX through the attach API), open file descriptors,
 * TCP connections to the store and to Kafka ({@code /proc}), the consumer group's lag; and, from the handler's runs,
 * the runs per second and the end-to-end latency (publish to handler run) p50, p99 and max of the minute. After the
 * stream ends and everything is consumed, the process is stopped with SIGTERM and the effects are counted: lost (a
 * published ID without effect) must be 0; duplicate effects are re-runs of plain mode after a kill (at most the
 * in-flight work per kill) and must be 0 in transactional mode.
 *
 * <p>A steady state (issue 30): with a short {@code --retention} (the pipeline's), keys expire while the stream flows,
 * and the JDBC store purges them every {@code --purge-interval}; {@code --kill-every 0} runs without kills. Every
 * sample also reads the store ({@link StoreGauge}): on PostgreSQL the keys table's {@code pg_total_relation_size}, that
 * of its side tables, its rows and expired rows, dead row versions, deleted rows and vacuums; on Redis the server's
 * {@code used_memory}, the run's keys and the server's expired keys. The end says whether the size stayed flat over
 * the last half of the samples and compares the runs per second after the first keys could expire with before
 * ({@link SteadyState}). {@code --vacuum-every} runs {@code VACUUM} of the store's tables from the soak, for a server
 * whose autovacuum is off.
 *
 * <p>Needs a JDK 17 (the attach API), Linux ({@code /proc}), Redis and PostgreSQL as the tests find them
 * ({@code IDEM_TEST_REDIS_URL}, {@code IDEM_TEST_POSTGRES_URL} or the local defaults), and the built distribution.
 * Prints the report as it goes and writes it to {@code <work>/report.txt}; exits 1 if anything was lost.
 *
 * <pre>
 * bench/soak/soak.sh                                          # 30 minutes per setup, kill -9 every 5 minutes
 * bench/soak/soak.sh --duration 3m --kill-every 90s           # a short run: one kill per setup
 * bench/soak/soak.sh --rate 1000 --duration 8m --kill-every 0 --retention 2m --purge-interval 5s   # steady state
 * </pre>
 */
public final class Soak {

    private static final String PIPELINE = "soak";
    private static final String ROW =
            "%-8s %9s %9s %8s %12s %8s %6s %11s %11s %7s %7s %8s %8s %7s %9s %8s %9s %9s %4s  %s";
    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss");

    /** The command line, with its defaults. */
    private static final class Options {
        Duration duration = Duration.ofMinutes(30);
        Duration killEvery = Duration.ofMinutes(5);
        Duration sampleEvery = Duration.ofMinutes(1);
        Duration drainTimeout = Duration.ofMinutes(5);
        double load = 0.7;
        double rate;
        long calibration = 60_000;
        List<String> setups = List.of("redis", "postgresql");
        String redisUrl = env("IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379");
        String postgresUrl = env("IDEM_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test");
        String postgresUser = "postgres";
        Path distribution = Path.of("distribution/target/idem-0.1.0-SNAPSHOT");
        Path work;
        int partitions = 4;
        int concurrency = 8;
        int workMillis = 1;
        int repeatPercent = 10;
        String javaOpts = "-Xmx512m";
        Duration retention = Duration.ofMinutes(5);
        Duration purgeInterval;
        int purgeBatchSize;
        Duration vacuumEvery = Duration.ZERO;
        double flatPercent = 10;
        boolean keep;

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String name = args[i];
                if (name.equals("--keep")) {
                    o.keep = true;
                    continue;
                }
                if (name.equals("--help") || name.equals("-h")) {
                    usage(null);
                }
                if (i + 1 >= args.length) {
                    usage("missing value for " + name);
                }
                String v = args[++i];
                switch (name) {
                    case "--duration" -> o.duration = duration(v);
                    case "--kill-every" -> o.killEvery = duration(v);
                    case "--sample-every" -> o.sampleEvery = duration(v);
                    case "--drain-timeout" -> o.drainTimeout = duration(v);
                    case "--load" -> o.load = Double.parseDouble(v);
                    case "--rate" -> o.rate = Double.parseDouble(v);
                    case "--calibration" -> o.calibration = Long.parseLong(v);
                    case "--setups" -> o.setups = List.of(v.split(","));
                    case "--redis-url" -> o.redisUrl = v;
                    case "--postgres-url" -> o.postgresUrl = v;
                    case "--postgres-user" -> o.postgresUser = v;
                    case "--distribution" -> o.distribution = Path.of(v);
                    case "--work" -> o.work = Path.of(v);
                    case "--partitions" -> o.partitions = Integer.parseInt(v);
                    case "--concurrency" -> o.concurrency = Integer.parseInt(v);
                    case "--work-ms" -> o.workMillis = Integer.parseInt(v);
                    case "--repeat-percent" -> o.repeatPercent = Integer.parseInt(v);
                    case "--java-opts" -> o.javaOpts = v;
                    case "--retention" -> o.retention = duration(v);
                    case "--purge-interval" -> o.purgeInterval = duration(v);
                    case "--purge-batch-size" -> o.purgeBatchSize = Integer.parseInt(v);
                    case "--vacuum-every" -> o.vacuumEvery = duration(v);
                    case "--flat-percent" -> o.flatPercent = Double.parseDouble(v);
                    default -> usage("unknown option " + name);
                }
            }
            for (String setup : o.setups) {
                if (!setup.equals("redis") && !setup.equals("postgresql")) {
                    usage("unknown setup '" + setup + "': redis, postgresql");
                }
            }
            if (o.killEvery.isNegative() || o.vacuumEvery.isNegative() || o.sampleEvery.isZero()) {
                usage("--kill-every and --vacuum-every must be 0 or more, --sample-every more than 0");
            }
            if (o.work == null) {
                o.work = Path.of("bench/target/soak-" + LocalDateTime.now().format(STAMP));
            }
            return o;
        }

        private static void usage(String problem) {
            PrintStream out = problem == null ? System.out : System.err;
            if (problem != null) {
                out.println("soak: " + problem);
            }
            out.println("""
                    usage: soak [--duration 30m] [--kill-every 5m] [--sample-every 1m] [--load 0.7 | --rate MSG_PER_S]
                                [--calibration 60000] [--setups redis,postgresql] [--concurrency 8] [--work-ms 1]
                                [--repeat-percent 10] [--partitions 4] [--java-opts -Xmx512m] [--drain-timeout 5m]
                                [--retention 5m] [--purge-interval 1m] [--purge-batch-size 1000] [--vacuum-every 0]
                                [--flat-percent 10]
                                [--redis-url URL] [--postgres-url JDBC_URL] [--postgres-user postgres]
                                [--distribution DIR] [--work DIR] [--keep]
                    Durations: 90s, 5m, 1h. Each setup (Kafka + Redis plain, Kafka + PostgreSQL transactional) runs
                    for --duration, published at --load of a calibrated throughput (or at --rate), with a kill -9 and
                    a restart every --kill-every (0: never); the report goes to stdout and <work>/report.txt.
                    --retention is the pipeline's; --purge-interval and --purge-batch-size the JDBC store's
                    store.jdbc.purge.* (unset: the store's defaults); --vacuum-every runs VACUUM of the store's
                    tables from the soak (0: never; for a server whose autovacuum is off). The store's size is read
                    every sample; the end says whether it stayed flat (max of the last half of the samples within
                    --flat-percent of their min) and compares runs/s after the first keys expired with before.""");
            System.exit(problem == null ? 0 : 2);
        }
    }

    private final Options o;
    private final PrintStream report;
    private final String run = UUID.randomUUID().toString().substring(0, 6);
    private EmbeddedKafka kafka;

    private Soak(Options options, PrintStream report) {
        this.o = options;
        this.report = report;
    }

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        Files.createDirectories(options.work);
        Path reportFile = options.work.resolve("report.txt");
        boolean lost;
        try (PrintStream file = new PrintStream(Files.newOutputStream(reportFile), true, StandardCharsets.UTF_8)) {
            PrintStream both = new PrintStream(new TeeStream(System.out, file), true, StandardCharsets.UTF_8);
            lost = new Soak(options, both).runAll();
            both.flush();
        }
        System.out.println("Report: " + reportFile);
        System.exit(lost ? 1 : 0);
    }

    private boolean runAll() throws Exception {
        line("Idem soak %s, %s; %d cores; distribution %s", run, LocalDateTime.now().withNano(0),
                Runtime.getRuntime().availableProcessors(), o.distribution.toAbsolutePath().normalize());
        line("per setup: %s at %s, kill -9 %s, a sample every %s; handler: %d ms of work, concurrency %d; %d %%"
                + " repeated IDs; %d partitions; JAVA_OPTS %s", human(o.duration), o.rate > 0
                        ? String.format(Locale.ROOT, "%,.0f msg/s (--rate)", o.rate)
                        : String.format(Locale.ROOT, "%.0f %% of the calibrated throughput", o.load * 100),
                o.killEvery.isZero() ? "never" : "every " + human(o.killEvery) + " (restart at once)",
                human(o.sampleEvery), o.workMillis, o.concurrency, o.repeatPercent, o.partitions, o.javaOpts);
        line("retention %s; JDBC store purge every %s, batches of %s; VACUUM from the soak %s", human(o.retention),
                o.purgeInterval == null ? "1m (default)" : human(o.purgeInterval),
                o.purgeBatchSize > 0 ? String.format("%,d", o.purgeBatchSize) : "1,000 (default)",
                o.vacuumEvery.isZero() ? "never" : "every " + human(o.vacuumEvery));
        if (!Files.isExecutable(o.distribution.resolve("bin/idem"))) {
            throw new IllegalStateException("No built distribution at " + o.distribution
                    + ": mvn -q -B install -DskipTests first, or give --distribution");
        }
        kafka = EmbeddedKafka.start();
        boolean anyLost = false;
        try {
            for (String setup : o.setups) {
                anyLost |= setup(setup.equals("redis") ? new RedisPlain() : new PostgresTransactional());
            }
        } finally {
            kafka.close();
        }
        line("");
        line("RESULT: %s", anyLost ? "LOST MESSAGES (see above)" : "lost = 0 in every setup");
        return anyLost;
    }

    /** A store and mode under soak. */
    private abstract class Setup {
        final String name;
        final int storePort;

        Setup(String name, int storePort) {
            this.name = name;
            this.storePort = storePort;
        }

        abstract String storeYaml(String phase);

        abstract boolean transactional();

        /** What reads the store's size during {@code phase}. */
        abstract StoreGauge gauge(String phase) throws Exception;

        /** The handler's effects table for {@code phase}, created; null in plain mode. */
        String effectsTable(String phase) throws SQLException {
            return null;
        }

        /** IDs with an effect and effects in all, from the table; null in plain mode. */
        long[] effects(String table) throws SQLException {
            return null;
        }

        void cleanUp() throws SQLException {
        }
    }

    private final class RedisPlain extends Setup {
        RedisPlain() {
            super("Kafka (" + o.partitions + " partitions) + Redis, plain mode", URI.create(o.redisUrl).getPort());
        }

        @Override
        String storeYaml(String phase) {
            return """
                    store:
                      type: redis
                      redis: { uri: "%s", key-prefix: "idem-soak-%s-%s:" }
                    """.formatted(o.redisUrl, run, phase);
        }

        @Override
        boolean transactional() {
            return false;
        }

        @Override
        StoreGauge gauge(String phase) {
            return new RedisGauge(o.redisUrl, "idem-soak-" + run + "-" + phase + ":");
        }
    }

    private final class PostgresTransactional extends Setup {
        private final List<String> tables = new ArrayList<>();

        PostgresTransactional() {
            super("Kafka (" + o.partitions + " partitions) + PostgreSQL, transactional mode (group 10)",
                    URI.create(o.postgresUrl.substring(5)).getPort());
        }

        @Override
        String storeYaml(String phase) {
            String keys = keysTable(phase);
            tables.add(keys);
            String purge = (o.purgeInterval == null ? "" : ", purge.interval: " + o.purgeInterval.toMillis() + "ms")
                    + (o.purgeBatchSize > 0 ? ", purge.batch-size: " + o.purgeBatchSize : "");
            return """
                    store:
                      type: jdbc
                      jdbc: { url: "%s", username: %s, table: %s%s }
                    """.formatted(o.postgresUrl, o.postgresUser, keys, purge);
        }

        private String keysTable(String phase) {
            return "soak_keys_" + run + "_" + phase;
        }

        @Override
        StoreGauge gauge(String phase) throws SQLException {
            PostgresGauge gauge = new PostgresGauge(o.postgresUrl, o.postgresUser, keysTable(phase));
            line("PostgreSQL autovacuum: %s%s", gauge.autovacuum(), o.vacuumEvery.isZero() ? ""
                    : "; the soak runs VACUUM of the store's tables every " + human(o.vacuumEvery));
            if (!o.vacuumEvery.isZero()) {
                gauge.vacuumEvery(o.vacuumEvery);
            }
            return gauge;
        }

        @Override
        boolean transactional() {
            return true;
        }

        @Override
        String effectsTable(String phase) throws SQLException {
            String table = "soak_effects_" + run + "_" + phase;
            tables.add(table);
            sql("CREATE TABLE " + table + " (n BIGINT NOT NULL, pid BIGINT NOT NULL)");
            return table;
        }

        @Override
        long[] effects(String table) throws SQLException {
            try (Connection c = DriverManager.getConnection(o.postgresUrl, o.postgresUser, "");
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT COUNT(DISTINCT n), COUNT(*) FROM " + table)) {
                rs.next();
                return new long[] {rs.getLong(1), rs.getLong(2)};
            }
        }

        @Override
        void cleanUp() throws SQLException {
            if (!o.keep) {
                for (String table : tables) {
                    if (table.startsWith("soak_keys_")) {
                        try (PostgresGauge gauge = new PostgresGauge(o.postgresUrl, o.postgresUser, table)) {
                            for (String side : gauge.tables()) {
                                sql("DROP TABLE IF EXISTS " + side);
                            }
                        }
                    }
                    sql("DROP TABLE IF EXISTS " + table);
                }
            }
        }

        private void sql(String statement) throws SQLException {
            try (Connection c = DriverManager.getConnection(o.postgresUrl, o.postgresUser, "");
                    Statement s = c.createStatement()) {
                s.execute(statement);
            }
        }
    }

    /** One minute (one sample) of the report. */
    private static final class Row {
        final String label;
        final int bucket;
        long sent;
        long lag = -1;
        SoakNode.Figures figures;
        /** The store at the row's end, and at its start; null if it could not be read. */
        StoreGauge.Sample store;
        StoreGauge.Sample storeBefore;
        final List<String> events = new ArrayList<>();

        Row(String label, int bucket) {
            this.label = label;
            this.bucket = bucket;
        }
    }

    /** Calibrates, soaks and reports one setup; true if anything was lost. */
    private boolean setup(Setup setup) throws Exception {
        line("");
        line("== %s ==", setup.name);
        try {
            double rate = o.rate > 0 ? o.rate : o.load * calibrate(setup);
            return soak(setup, rate);
        } finally {
            setup.cleanUp();
        }
    }

    /** Drains a pre-filled topic and answers the median of its runs per second. */
    private double calibrate(Setup setup) throws Exception {
        String phase = "cal";
        String topic = "soak-" + run + "-" + phase + "-" + setup.storePort;
        kafka.createTopic(topic, o.partitions);
        SoakStream fill = new SoakStream(kafka.bootstrapServers(), topic, "cal" + run, o.repeatPercent);
        fill.fill(o.calibration);
        Path dir = o.work.resolve(setupId(setup) + "-calibration");
        Path runs = dir.resolve("runs");
        SoakNode node = node(setup, phase, topic, dir, runs);
        RunsTail tail = new RunsTail(runs, fill, System.currentTimeMillis(), 1_000);
        long started = System.nanoTime();
        node.start();
        try {
            awaitUntil(() -> {
                tail.poll();
                return tail.neverRan(fill.highest()) == 0;
            }, node, Duration.ofMinutes(10), "the calibration's messages to be processed");
        } finally {
            node.terminate(Duration.ofSeconds(60));
        }
        List<Long> perSecond = new ArrayList<>();
        int first = -1;
        int last = -1;
        for (int b = 0; b < 100_000; b++) {
            if (tail.runsIn(b) > 0) {
                first = first < 0 ? b : first;
                last = b;
            }
        }
        // Full seconds only: the first holds the start, the last the tail end.
        for (int b = first + 1; b < last; b++) {
            perSecond.add(tail.runsIn(b));
        }
        perSecond.sort(null);
        double median = perSecond.isEmpty() ? tail.runs() / Math.max(1.0, last - first + 1)
                : perSecond.get(perSecond.size() / 2);
        line("calibration: %,d messages (%,d IDs) drained in %.1f s from the process start; median %,.0f runs/s over"
                + " %d full seconds -> soak at %,.0f msg/s", fill.sent(), fill.highest(),
                (System.nanoTime() - started) / 1e9, median, perSecond.size(), median * o.load);
        kafka.deleteTopic(topic);
        return median;
    }

    private SoakNode node(Setup setup, String phase, String topic, Path dir, Path runs) throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put(SoakHandler.RUNS_DIR_ENV, runs.toAbsolutePath().toString());
        env.put(SoakHandler.WORK_MS_ENV, Integer.toString(o.workMillis));
        String table = setup.effectsTable(phase);
        if (table != null) {
            env.put(SoakHandler.TABLE_ENV, table);
        }
        return new SoakNode(o.distribution, dir.resolve("idem"), port -> config(setup, phase, topic, port), env,
                o.javaOpts);
    }

    private String config(Setup setup, String phase, String topic, int port) {
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: [%s]
                    group-id-prefix: "soak-%s-%s-"
                    group-instance-id: soak-node-1
                """.formatted(kafka.bootstrapServers(), run, phase) + setup.storeYaml(phase) + """
                pipelines:
                  %s:
                    source: %s
                    handler: %s
                    transactional: %s
                    transactional.group: %d
                    concurrency: %d
                    lease: 10s
                    retention: %dms
                runtime:
                  summary-interval: 60s
                  shutdown-timeout: 20s
                  http: { port: %d }
                """.formatted(PIPELINE, topic, SoakHandler.class.getName(), setup.transactional(),
                setup.transactional() ? 10 : 1, o.concurrency, o.retention.toMillis(), port);
    }

    private static String setupId(Setup setup) {
        return setup instanceof RedisPlain ? "redis" : "postgresql";
    }

    /** Soaks one setup at {@code rate}; true if anything was lost. */
    private boolean soak(Setup setup, double rate) throws Exception {
        try (StoreGauge gauge = setup.gauge("soak")) {
            return soak(setup, rate, gauge);
        }
    }

    private boolean soak(Setup setup, double rate, StoreGauge gauge) throws Exception {
        String phase = "soak";
        String topic = "soak-" + run + "-" + phase + "-" + setup.storePort;
        String group = "soak-" + run + "-" + phase + "-" + PIPELINE;
        kafka.createTopic(topic, o.partitions);
        Path dir = o.work.resolve(setupId(setup));
        Path runs = dir.resolve("runs");
        SoakStream stream = new SoakStream(kafka.bootstrapServers(), topic, "soak" + run, o.repeatPercent);
        SoakNode node = node(setup, phase, topic, dir, runs);
        String effectsTable = setup.transactional() ? "soak_effects_" + run + "_" + phase : null;
        node.start();
        awaitUntil(node::serving, node, Duration.ofMinutes(2), "the first process to serve /metrics");

        long sample = o.sampleEvery.toMillis();
        long startMillis = System.currentTimeMillis();
        long start = System.nanoTime();
        RunsTail tail = new RunsTail(runs, stream, startMillis, sample);
        Thread poller = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                tail.poll();
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "soak-runs-tail");
        poller.setDaemon(true);
        poller.start();
        StoreGauge.Sample storeBefore = sample(gauge);
        stream.start(rate);
        line("soak: %s publishing %,.0f msg/s to %s; process %s", human(o.duration), rate, topic, node);
        line("as it goes (the table is printed again at the end, once every run is read):");
        line(ROW, "time", "sent/s", "runs/s", "lag", "heap-afterGC", "threads", "fds", "store-conns", "kafka-conns",
                "p50 ms", "p99 ms", "max ms", "size MB", "side MB", "keys", "expired", "dead", "purged", "vac",
                "events");

        List<Row> rows = new ArrayList<>();
        Map<Integer, List<String>> events = new TreeMap<>();
        List<long[]> restarts = new ArrayList<>();
        long sentBefore = 0;
        int nextSample = 1;
        int nextKill = 1;
        int kills = 0;
        int crashes = 0;
        long durationNanos = o.duration.toNanos();
        while (true) {
            long sampleAt = nextSample * TimeUnit.MILLISECONDS.toNanos(sample);
            long killAt = o.killEvery.isZero() ? Long.MAX_VALUE : nextKill * o.killEvery.toNanos();
            boolean killDue = killAt < durationNanos;
            long next = Math.min(Math.min(sampleAt, killDue ? killAt : Long.MAX_VALUE), durationNanos);
            while (System.nanoTime() - start < next) {
                long left = TimeUnit.NANOSECONDS.toMillis(next - (System.nanoTime() - start));
                Thread.sleep(Math.max(1, Math.min(200, left)));
                if (!node.alive()) {
                    int bucket = bucketNow(start, sample);
                    events.computeIfAbsent(bucket, b -> new ArrayList<>()).add("exited by itself, restarted");
                    crashes++;
                    line("process exited by itself:%n%s", node.logTail());
                    node.start();
                }
            }
            long now = System.nanoTime() - start;
            // A sample due at the same time as a kill is taken first, of the process about to die.
            if (now >= sampleAt) {
                Row row = new Row(human(Duration.ofMillis(nextSample * sample)), nextSample - 1);
                row.sent = stream.sent() - sentBefore;
                sentBefore = stream.sent();
                row.lag = lag(group, topic);
                row.figures = node.figures(setup.storePort, kafkaPort());
                row.storeBefore = storeBefore;
                row.store = sample(gauge);
                storeBefore = row.store == null ? storeBefore : row.store;
                rows.add(row);
                line("%s", format(row, sample, tail, setup.storePort));
                nextSample++;
            }
            if (killDue && now >= killAt) {
                int bucket = bucketNow(start, sample);
                node.kill();
                kills++;
                node.start();
                restarts.add(new long[] {node.pid(), System.currentTimeMillis(), bucket});
                events.computeIfAbsent(bucket, b -> new ArrayList<>()).add("kill -9 #" + nextKill + " at "
                        + human(Duration.ofNanos(now)));
                nextKill++;
            }
            if (now >= durationNanos) {
                break;
            }
        }
        stream.stop();
        stream.failIfFailed();
        long streamEnded = System.nanoTime();
        awaitUntil(() -> lag(group, topic) == 0 && (effectsTable != null
                ? setup.effects(effectsTable)[0] >= stream.highest() : tail.neverRan(stream.highest()) == 0),
                node, o.drainTimeout, "everything published to be consumed and to have an effect");
        long drained = System.nanoTime();
        awaitQuiet(tail, Duration.ofSeconds(3));
        Row end = new Row("drained", -1);
        end.lag = lag(group, topic);
        end.figures = node.figures(setup.storePort, kafkaPort());
        end.store = sample(gauge);
        int exit = node.terminate(Duration.ofSeconds(60));
        poller.interrupt();
        poller.join();
        tail.poll();

        // The full table, with the latencies of every minute now that all runs are read.
        line("");
        line("report: each row covers the %s before its time; sent/s and runs/s over it, lag (end offsets minus the"
                + " group's committed offsets), heap after the last GC, live threads, open file descriptors and"
                + " established connections to the store and to Kafka at its end; latency = publish to handler"
                + " run, of the runs in it; the store at its end: size, side tables' size, keys, of them expired,"
                + " dead row versions, and purged and vacuums during it (what each is: below)", human(o.sampleEvery));
        line(ROW, "time", "sent/s", "runs/s", "lag", "heap-afterGC", "threads", "fds", "store-conns", "kafka-conns",
                "p50 ms", "p99 ms", "max ms", "size MB", "side MB", "keys", "expired", "dead", "purged", "vac",
                "events");
        for (Row row : rows) {
            row.events.addAll(events.getOrDefault(row.bucket, List.of()));
            for (long[] r : restarts) {
                if (r[2] == row.bucket) {
                    long first = tail.firstRunOf(r[0]);
                    row.events.add(first > 0 ? "restarted process ran its first message " + (first - r[1]) / 1000.0
                            + " s after its start" : "restarted process ran nothing");
                }
            }
            line("%s", format(row, sample, tail, setup.storePort));
        }
        line("%s", format(end, sample, tail, setup.storePort));

        long highest = stream.highest();
        long lost;
        long duplicateEffects;
        String effectsNote;
        if (effectsTable != null) {
            long[] effects = setup.effects(effectsTable);
            lost = highest - effects[0];
            duplicateEffects = effects[1] - effects[0];
            effectsNote = String.format("effects (rows committed with their key) %,d for %,d IDs", effects[1],
                    effects[0]);
        } else {
            lost = tail.neverRan(highest);
            duplicateEffects = tail.reruns();
            effectsNote = String.format("effects (handler runs) %,d for %,d IDs", tail.runs(), tail.distinct());
        }
        long warnings = node.logLines(" WARN ").size();
        List<String> errors = node.logLines(" ERROR ");
        line("");
        line("published %,d messages (%,d IDs, %,d repeats; %,d failed to publish) in %s; kills %d%s; drained %.1f s"
                + " after the stream ended; SIGTERM exit %d%s", stream.sent(), highest, stream.repeats(),
                stream.failed(), human(o.duration), kills, crashes > 0 ? ", exits by itself " + crashes : "",
                (drained - streamEnded) / 1e9, exit, exit == 143 ? " (graceful)" : " (NOT the graceful 143)");
        line("%s; handler runs in all %,d (re-runs %,d)", effectsNote, tail.runs(), tail.reruns());
        line("log lines: WARN %d, ERROR %d%s", warnings, errors.size(),
                errors.isEmpty() ? "" : "; first: " + errors.get(0));
        line("lost = %d%s; duplicate effects = %d (%s)", lost, lost == 0 ? "" : "  <-- LOST", duplicateEffects,
                setup.transactional() ? "transactional: must be 0" : "plain: re-runs after each kill -9, at most the"
                        + " in-flight work (max-in-flight 1,000) per kill");
        line("store: %s", gauge.describe());
        new SteadyState(rows.stream().map(r -> new SteadyState.Minute(r.bucket, r.sent, tail.runsIn(r.bucket), r.lag,
                r.store, r.storeBefore)).toList(), o.sampleEvery, o.retention, o.flatPercent).verdict()
                .forEach(v -> line("%s", v));
        kafka.deleteTopic(topic);
        return lost != 0 || (setup.transactional() && duplicateEffects != 0);
    }

    private String format(Row row, long sampleMillis, RunsTail tail, int storePort) {
        double seconds = sampleMillis / 1000.0;
        SoakNode.Figures f = row.figures;
        String conns = f == null ? "-" : String.valueOf(f.connections().get(storePort));
        String kafkaConns = f == null ? "-" : String.valueOf(f.connections().get(kafkaPort()));
        boolean minute = row.bucket >= 0;
        StoreGauge.Sample st = row.store;
        StoreGauge.Sample before = row.storeBefore;
        return String.format(Locale.ROOT, ROW, row.label,
                minute ? String.format("%,.0f", row.sent / seconds) : "-",
                minute ? String.format("%,.0f", tail.runsIn(row.bucket) / seconds) : "-",
                row.lag < 0 ? "-" : String.format("%,d", row.lag),
                f == null || f.heapAfterGcBytes() < 0 ? "-"
                        : String.format("%.1f MB", f.heapAfterGcBytes() / 1048576.0),
                f == null || f.threads() < 0 ? "-" : Integer.toString(f.threads()),
                f == null || f.fileDescriptors() < 0 ? "-" : Integer.toString(f.fileDescriptors()),
                conns, kafkaConns,
                minute ? dash(tail.percentile(row.bucket, 50)) : "-",
                minute ? dash(tail.percentile(row.bucket, 99)) : "-",
                minute ? dash(tail.max(row.bucket)) : "-",
                st == null ? "-" : megabytes(st.bytes()),
                st == null ? "-" : megabytes(st.sideBytes()),
                st == null ? "-" : count(st.keys()),
                st == null ? "-" : count(st.expired()),
                st == null ? "-" : count(st.dead()),
                st == null || before == null || st.removed() < 0 ? "-" : count(st.removed() - before.removed()),
                st == null || before == null || st.vacuums() < 0 ? "-" : count(st.vacuums() - before.vacuums()),
                String.join("; ", row.events));
    }

    /** The store now; null (a dash in the report) if it could not be read, which the report says. */
    private StoreGauge.Sample sample(StoreGauge gauge) {
        try {
            return gauge.sample();
        } catch (Exception e) {
            line("could not read the store's size: %s", e);
            return null;
        }
    }

    private static String megabytes(long bytes) {
        return bytes < 0 ? "-" : String.format(Locale.ROOT, "%.1f", bytes / 1048576.0);
    }

    private static String count(long n) {
        return n < 0 ? "-" : String.format(Locale.ROOT, "%,d", n);
    }

    private int kafkaPort() {
        String servers = kafka.bootstrapServers();
        return Integer.parseInt(servers.substring(servers.lastIndexOf(':') + 1));
    }

    private static String dash(long value) {
        return value < 0 ? "-" : Long.toString(value);
    }

    private static int bucketNow(long start, long sampleMillis) {
        return (int) (TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) / sampleMillis);
    }

    /** The group's lag over the topic's partitions: end offsets minus committed offsets (none: 0). */
    private long lag(String group, String topic) {
        try {
            Admin admin = kafka.admin();
            Map<TopicPartition, OffsetSpec> latest = new LinkedHashMap<>();
            for (int p = 0; p < o.partitions; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            var ends = admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            long lag = 0;
            for (var end : ends.entrySet()) {
                OffsetAndMetadata c = committed.get(end.getKey());
                lag += end.getValue().offset() - (c == null ? 0 : c.offset());
            }
            return lag;
        } catch (Exception e) {
            return -1;
        }
    }

    /** Polls {@code condition} every second until it holds; a process that exits by itself fails it at once. */
    private static void awaitUntil(SqlCondition condition, SoakNode node, Duration timeout, String what)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.holds()) {
            if (!node.alive()) {
                throw new IllegalStateException("bin/idem run exited by itself while waiting for " + what + ":\n"
                        + node.logTail());
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("Waited " + human(timeout) + " for " + what + " in vain; process "
                        + node + ":\n" + node.logTail());
            }
            Thread.sleep(1_000);
        }
    }

    /** A condition that may query the database. */
    @FunctionalInterface
    private interface SqlCondition {
        boolean holds() throws Exception;
    }

    private static void awaitQuiet(RunsTail tail, Duration quiet) throws InterruptedException {
        long seen = -1;
        long since = System.nanoTime();
        while (System.nanoTime() - since < quiet.toNanos()) {
            tail.poll();
            long now = tail.runs();
            if (now != seen) {
                seen = now;
                since = System.nanoTime();
            }
            Thread.sleep(200);
        }
    }

    private void line(String format, Object... args) {
        report.println(String.format(Locale.ROOT, format, args));
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    static Duration duration(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        long n = Long.parseLong(t.replaceAll("[a-z]+$", ""));
        return switch (t.replaceAll("^[0-9]+", "")) {
            case "ms" -> Duration.ofMillis(n);
            case "s", "" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> throw new IllegalArgumentException("Not a duration: " + text + " (90s, 5m, 1h)");
        };
    }

    static String human(Duration d) {
        long s = d.toSeconds();
        if (s % 3600 == 0 && s > 0) {
            return s / 3600 + "h";
        }
        if (s % 60 == 0 && s > 0) {
            return s / 60 + "m";
        }
        return s >= 60 ? s / 60 + "m" + s % 60 + "s" : s + "s";
    }

    /** Writes to two streams. */
    private static final class TeeStream extends OutputStream {
        private final OutputStream a;
        private final OutputStream b;

        TeeStream(OutputStream a, OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public void write(int c) throws IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public void write(byte[] bytes, int off, int len) throws IOException {
            a.write(bytes, off, len);
            b.write(bytes, off, len);
        }

        @Override
        public void flush() throws IOException {
            a.flush();
            b.flush();
        }
    }

}
