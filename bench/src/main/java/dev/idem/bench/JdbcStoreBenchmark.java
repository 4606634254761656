package dev.idem.bench;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The {@code jdbc} store's claim+complete throughput against a plain batched JDBC insert into a table
 * of the same shape (same columns, primary key and index, made by the store itself), in the same run.
 * PostgreSQL at {@code IDEM_BENCH_POSTGRES_URL} (default {@code jdbc:postgresql://127.0.0.1:5432/test},
 * user postgres), MariaDB at {@code IDEM_BENCH_MARIADB_URL} (default
 * {@code jdbc:mariadb://127.0.0.1:3306/test}, user root), H2 in a temporary file.
 *
 * <ul>
 * <li>{@code claimAndComplete}: one {@code claim} of {@code batch} fresh keys, then a {@code complete}
 *     per key, spread over {@code completers} threads as the pipeline's workers spread them.</li>
 * <li>{@code claim}: the claim alone.</li>
 * <li>{@code claimAndCompleteAll}: the claim, then one {@code completeAll} of the batch (PostgreSQL and H2:
 *     one statement; MariaDB: one JDBC batch in one transaction).</li>
 * <li>{@code claimAndBatchedComplete}: the claim, then the store's complete statement for every key as
 *     one plain JDBC batch and one commit, without answers per key: the raw batched write that
 *     {@code completeAll} is measured against.</li>
 * <li>{@code plainBatchedInsert}: the database's own limit for writing the batch: one prepared
 *     {@code INSERT} per key, sent with {@code executeBatch} and committed once.</li>
 * </ul>
 * Read the {@code :keys} lines: keys per second. Each trial uses tables of its own, dropped at its end.
 *
 * <p>Run: {@code mvn -q -B -pl bench -am package -DskipTests && java -jar bench/target/benchmarks.jar JdbcStoreBenchmark}
 * <br>Briefly, PostgreSQL only:
 * {@code java -jar bench/target/benchmarks.jar JdbcStoreBenchmark -p database=postgresql -f 1 -wi 2 -i 3 -w 2 -r 3}
 * <br>Completions alone, one database:
 * {@code java -jar bench/target/benchmarks.jar 'JdbcStoreBenchmark.claimAnd' -p database=mariadb -p batch=100 -p completers=1 -f 1 -wi 1 -i 3 -w 2 -r 3}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class JdbcStoreBenchmark {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(10);

    /** A database to measure, with its URL and the plain insert's expressions on its clock. */
    public enum Database {
        POSTGRESQL("IDEM_BENCH_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test", "postgres", "now()",
                "now() + interval '30 seconds'", "now() + interval '630 seconds'", "now() + interval '600 seconds'"),
        MARIADB("IDEM_BENCH_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test", "root", "UTC_TIMESTAMP(6)",
                "UTC_TIMESTAMP(6) + INTERVAL 30 SECOND", "UTC_TIMESTAMP(6) + INTERVAL 630 SECOND",
                "UTC_TIMESTAMP(6) + INTERVAL 600 SECOND"),
        H2(null, null, null, "CURRENT_TIMESTAMP(6)", "DATEADD(SECOND, 30, CURRENT_TIMESTAMP(6))",
                "DATEADD(SECOND, 630, CURRENT_TIMESTAMP(6))", "DATEADD(SECOND, 600, CURRENT_TIMESTAMP(6))");

        final String envVariable;
        final String defaultUrl;
        final String user;
        final String now;
        final String leaseUntil;
        final String expiresAt;
        final String retainedUntil;

        Database(String envVariable, String defaultUrl, String user, String now, String leaseUntil, String expiresAt,
                String retainedUntil) {
            this.envVariable = envVariable;
            this.defaultUrl = defaultUrl;
            this.user = user;
            this.now = now;
            this.leaseUntil = leaseUntil;
            this.expiresAt = expiresAt;
            this.retainedUntil = retainedUntil;
        }
    }

    @Param({"postgresql", "mariadb", "h2"})
    String database;

    @Param({"1", "100", "1000"})
    int batch;

    private Database db;
    private String url;
    private Path h2Directory;
    private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    private final String storeTable = "idem_bench_" + suffix;
    private final String plainTable = "idem_plain_" + suffix;
    private DedupStore store;
    private Connection plain;
    private PreparedStatement insert;
    private Connection completer;
    private PreparedStatement completeBatch;
    private long next;

    @Setup(Level.Trial)
    public void connect() throws SQLException, IOException {
        db = Database.valueOf(database.toUpperCase(Locale.ROOT));
        if (db == Database.H2) {
            h2Directory = Files.createTempDirectory("idem-bench-h2");
            // As the store opens it (H2Dialect): the plain insert's connection must name the file the same way, or
            // H2 takes it for another database and finds the file locked.
            url = "jdbc:h2:async:" + h2Directory.resolve("idem").toAbsolutePath();
        } else {
            url = System.getenv().getOrDefault(db.envVariable, db.defaultUrl);
        }
        DedupStoreProvider provider = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("jdbc")).findFirst().orElseThrow();
        TestPluginConfig config = TestPluginConfig.defaults("store.jdbc", provider.configSpec())
                .with("url", url)
                .with("pool.maximum-size", 16);
        if (db.user != null) {
            config = config.with("username", db.user);
        }
        // The plain table is made by the store too, so that both have exactly the same shape.
        provider.create(config.with("table", plainTable), StoreContext.system()).close();
        store = provider.create(config.with("table", storeTable), StoreContext.system());
        plain = db.user == null ? DriverManager.getConnection(url) : DriverManager.getConnection(url, db.user, "");
        plain.setAutoCommit(false);
        insert = plain.prepareStatement("INSERT INTO " + plainTable
                + " (namespace, id, state, token, attempts, fingerprint, lease_until, expires_at) VALUES (?, ?, 1, ?, 1, NULL, "
                + db.leaseUntil + ", " + db.expiresAt + ")");
        completer = db.user == null ? DriverManager.getConnection(url) : DriverManager.getConnection(url, db.user, "");
        completer.setAutoCommit(false);
        // The store's own complete statement (see the jdbc store's Dialect), sent as one JDBC batch.
        completeBatch = completer.prepareStatement("UPDATE " + storeTable + " SET state = 2, lease_until = NULL, "
                + "expires_at = " + db.retainedUntil + " WHERE namespace = ? AND id = ? AND token = ? AND state = 1 "
                + "AND expires_at > " + db.now);
    }

    @TearDown(Level.Trial)
    public void dropTablesAndClose() throws SQLException, IOException {
        insert.close();
        completeBatch.close();
        completer.close();
        plain.setAutoCommit(true);
        try (Statement drop = plain.createStatement()) {
            drop.execute("DROP TABLE IF EXISTS " + plainTable);
            drop.execute("DROP TABLE IF EXISTS " + storeTable);
        }
        store.close();
        plain.close();
        if (h2Directory != null) {
            try (var files = Files.walk(h2Directory)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Benchmark
    public int claimAndComplete(Completers completers, Keys counter) throws Exception {
        List<ClaimRequest> requests = requests();
        List<ClaimResult> results = store.claim(requests);
        int done = completers.complete(store, requests, results, RETENTION);
        if (done != batch) {
            throw new IllegalStateException("Only " + done + " of " + batch + " keys were acquired and completed");
        }
        counter.keys += batch;
        return done;
    }

    /** The claim, then the batch's completions in one {@code completeAll}. */
    @Benchmark
    public int claimAndCompleteAll(Keys counter) {
        int done = Completers.claimAndCompleteAll(store, requests(), RETENTION);
        counter.keys += batch;
        return done;
    }

    /**
     * The raw batched write: the store's claim, then the store's complete statement for every key of the
     * batch as one JDBC batch in one transaction, outside the store and without finding out which keys an
     * update left alone.
     */
    @Benchmark
    public int claimAndBatchedComplete(Keys counter) throws SQLException {
        List<ClaimRequest> requests = requests();
        List<ClaimResult> results = store.claim(requests);
        byte[] namespace = "bench".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < batch; i++) {
            completeBatch.setBytes(1, namespace);
            completeBatch.setBytes(2, requests.get(i).key().id().getBytes(StandardCharsets.UTF_8));
            completeBatch.setLong(3, ((Acquired) results.get(i)).token());
            completeBatch.addBatch();
        }
        int[] counts = completeBatch.executeBatch();
        completer.commit();
        for (int count : counts) {
            if (count != 1 && count != Statement.SUCCESS_NO_INFO) {
                throw new IllegalStateException("A key of the batch was not completed: " + count);
            }
        }
        counter.keys += batch;
        return counts.length;
    }

    /** The claim alone: the store's share of the plain insert's work. */
    @Benchmark
    public int claim(Keys counter) {
        List<ClaimResult> results = store.claim(requests());
        counter.keys += batch;
        return results.size();
    }

    /** The database's own limit: the batch's rows inserted in one executeBatch and one commit. */
    @Benchmark
    public int plainBatchedInsert(Keys counter) throws SQLException {
        byte[] namespace = "bench".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < batch; i++) {
            insert.setBytes(1, namespace);
            insert.setBytes(2, Long.toString(next++).getBytes(StandardCharsets.UTF_8));
            insert.setLong(3, next);
            insert.addBatch();
        }
        int[] counts = insert.executeBatch();
        plain.commit();
        counter.keys += batch;
        return counts.length;
    }

    private List<ClaimRequest> requests() {
        List<ClaimRequest> requests = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            requests.add(new ClaimRequest(new StoreKey("bench", Long.toString(next++)), null, LEASE, RETENTION));
        }
        return requests;
    }
}
