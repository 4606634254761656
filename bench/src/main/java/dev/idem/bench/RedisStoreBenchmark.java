package dev.idem.bench;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.TestPluginConfig;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * The {@code redis} store's claim+complete throughput against the raw client on the same server, in the
 * same run. Redis must listen at {@code IDEM_BENCH_REDIS_URL} (default {@code redis://127.0.0.1:6379}).
 *
 * <ul>
 * <li>{@code claimAndComplete}: one {@code claim} of {@code batch} fresh keys (one script call), then a
 *     {@code complete} per key, spread over {@code completers} threads as the pipeline's workers spread
 *     them (1: one after the other).</li>
 * <li>{@code claimAndCompleteAll}: the claim, then one {@code completeAll} of the batch (one script call).</li>
 * <li>{@code claim}: the claim alone, one script call per batch.</li>
 * <li>{@code rawSetNxPx}: the least a claim can be: {@code SET key value NX PX} for each key of the batch,
 *     pipelined on one Lettuce connection and flushed at once. No completion, no state, no fencing.</li>
 * </ul>
 * Read the {@code :keys} lines: keys per second. All keys live under a random {@code idem-bench-*} prefix
 * and are deleted at the end of each trial.
 *
 * <p>Run: {@code mvn -q -B -pl bench -am package -DskipTests && java -jar bench/target/benchmarks.jar RedisStoreBenchmark}
 * <br>Briefly, completions alone against the raw client:
 * {@code java -jar bench/target/benchmarks.jar 'RedisStoreBenchmark.(claimAndComplete|claimAndCompleteAll|rawSetNxPx)$' -p batch=100 -p completers=1 -f 1 -wi 2 -i 3 -w 2 -r 3}
 * <br>The server's own limit (redis-benchmark, SET NX PX pipelined 64 deep):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.RedisServerLimit}
 *
 * <p>{@code waitReplicas} is the store's {@code wait.replicas}: 0 (the default) writes without waiting; 1 sends a
 * {@code WAIT 1} behind every claim and completion, and needs a primary with a replica at
 * {@code IDEM_BENCH_REDIS_URL}. What waiting costs, against a primary and a replica of your own:
 * <pre>
 * redis-server --port 6390 --save "" --appendonly no --daemonize yes
 * redis-server --port 6391 --save "" --appendonly no --daemonize yes --replicaof 127.0.0.1 6390
 * IDEM_BENCH_REDIS_URL=redis://127.0.0.1:6390 java -jar bench/target/benchmarks.jar  *     'RedisStoreBenchmark.(claim|claimAndComplete|claimAndCompleteAll)$' -p waitReplicas=0,1 -p batch=1,100  *     -p completers=1,16 -f 1 -wi 2 -i 3 -w 2 -r 3
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class RedisStoreBenchmark {

    static final String URL = System.getenv().getOrDefault("IDEM_BENCH_REDIS_URL", "redis://127.0.0.1:6379");
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(10);

    @Param({"1", "100", "1000"})
    int batch;

    /** The store's {@code wait.replicas}; 1 needs a replica of the server (see above). */
    @Param({"0"})
    int waitReplicas;

    private final String prefix = "idem-bench-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    private DedupStore store;
    private RedisClient client;
    private StatefulRedisConnection<byte[], byte[]> raw;
    private long next;

    @Setup(Level.Trial)
    public void connect() {
        DedupStoreProvider provider = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("redis")).findFirst().orElseThrow();
        store = provider.create(TestPluginConfig.defaults("store.redis", provider.configSpec())
                .with("uri", URL).with("key-prefix", prefix).with("wait.replicas", waitReplicas),
                StoreContext.system());
        client = RedisClient.create(URL);
        raw = client.connect(ByteArrayCodec.INSTANCE);
        // The raw client at its best: the whole batch leaves in one write.
        raw.setAutoFlushCommands(false);
    }

    @TearDown(Level.Trial)
    public void deleteKeysAndClose() {
        raw.setAutoFlushCommands(true);
        deleteKeys(raw.async(), prefix);
        raw.close();
        client.shutdown();
        store.close();
    }

    @Benchmark
    public int claimAndComplete(Completers completers, Keys counter) throws Exception {
        List<ClaimRequest> requests = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            requests.add(new ClaimRequest(new StoreKey("bench", Long.toString(next++)), null, LEASE, RETENTION));
        }
        List<ClaimResult> results = store.claim(requests);
        int done = completers.complete(store, requests, results, RETENTION);
        if (done != batch) {
            throw new IllegalStateException("Only " + done + " of " + batch + " keys were acquired and completed");
        }
        counter.keys += batch;
        return done;
    }

    /** The claim, then the batch's completions in one {@code completeAll}: one script call each. */
    @Benchmark
    public int claimAndCompleteAll(Keys counter) {
        List<ClaimRequest> requests = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            requests.add(new ClaimRequest(new StoreKey("bench", Long.toString(next++)), null, LEASE, RETENTION));
        }
        int done = Completers.claimAndCompleteAll(store, requests, RETENTION);
        counter.keys += batch;
        return done;
    }

    /** Claims alone: the store's share of the raw client's work. */
    @Benchmark
    public int claim(Keys counter) {
        List<ClaimRequest> requests = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            requests.add(new ClaimRequest(new StoreKey("bench", Long.toString(next++)), null, LEASE, RETENTION));
        }
        List<ClaimResult> results = store.claim(requests);
        counter.keys += batch;
        return results.size();
    }


    @Benchmark
    public int rawSetNxPx(Keys counter) {
        RedisAsyncCommands<byte[], byte[]> redis = raw.async();
        SetArgs nxPx = SetArgs.Builder.nx().px(LEASE.plus(RETENTION).toMillis());
        // About as long as the store's claim record.
        byte[] value = "C|4611686018427387904|1|1764000000000000|600000|".getBytes(StandardCharsets.US_ASCII);
        List<RedisFuture<String>> replies = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            byte[] key = (prefix + "raw:" + next++).getBytes(StandardCharsets.UTF_8);
            replies.add(redis.set(key, value, nxPx));
        }
        raw.flushCommands();
        if (!LettuceFutures.awaitAll(Duration.ofSeconds(10), replies.toArray(new RedisFuture<?>[0]))) {
            throw new IllegalStateException("Redis did not answer a batch of " + batch + " SETs within 10s");
        }
        counter.keys += batch;
        return replies.size();
    }

    private static void deleteKeys(RedisAsyncCommands<byte[], byte[]> redis, String prefix) {
        ScanArgs matching = ScanArgs.Builder.matches((prefix + "*").getBytes(StandardCharsets.UTF_8)).limit(10_000);
        try {
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<byte[]> page = redis.scan(cursor, matching).get(30, TimeUnit.SECONDS);
                if (!page.getKeys().isEmpty()) {
                    redis.unlink(page.getKeys().toArray(new byte[0][])).get(30, TimeUnit.SECONDS);
                }
                cursor = page;
            } while (!cursor.isFinished());
        } catch (Exception e) {
            throw new IllegalStateException("Could not delete the benchmark's keys under " + prefix, e);
        }
    }
}
