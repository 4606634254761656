package dev.idem.bench;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.TestPluginConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.ServiceLoader;
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
 * The {@code caffeine} store's cost per key on one thread, against what the raw consumer of
 * {@code KafkaEndToEndBenchmark} pays to deduplicate (a set of the IDs seen), in the same run: the store's share of
 * the per-message path, without a broker, a pipeline or a second thread to blur it.
 *
 * <ul>
 * <li>{@code claimAndCompleteAll}: one {@code claim} of {@code batch} fresh keys, then one {@code completeAll} of
 *     them, as the pipeline's intake and group commit call the store.</li>
 * <li>{@code rawSet}: each ID added to a set bounded, like the store, to {@code storeSize} IDs, the oldest
 *     forgotten first.</li>
 * </ul>
 * Every side first fills its memory with {@code storeSize} keys (the setup's, not measured), so a key's look-up
 * and write meet a table as large as a full store's. IDs are 36 characters, like a UUID's text; fingerprints a
 * SHA-256 as the runtime sends it. Read the {@code :keys} lines: keys per second.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar CaffeineStoreBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
public class CaffeineStoreBenchmark {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(10);
    /** An unpadded base64url SHA-256, the form the runtime's fingerprints take. */
    private static final String FINGERPRINT = "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg";
    private static final String ID_PREFIX = "5f0c1d2e-3b4a-4c5d-8e6f-";

    @Param({"100"})
    int batch;

    /** The store's {@code maximum-size}, and the raw set's bound. */
    @Param({"1000000"})
    int storeSize;

    private DedupStore store;
    private BoundedSet seen;
    private long next;

    @Setup(Level.Trial)
    public void fill() {
        DedupStoreProvider provider = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("caffeine")).findFirst().orElseThrow();
        store = provider.create(TestPluginConfig.defaults("store.caffeine", provider.configSpec())
                .with("maximum-size", storeSize), StoreContext.system());
        seen = new BoundedSet(storeSize);
        for (int filled = 0; filled < storeSize; filled += batch) {
            claimAndCompleteAll(new Keys());
            rawSet(new Keys());
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        store.close();
    }

    @Benchmark
    public int claimAndCompleteAll(Keys counter) {
        int done = Completers.claimAndCompleteAll(store, requests(), RETENTION);
        counter.keys += batch;
        return done;
    }

    @Benchmark
    public int rawSet(Keys counter) {
        int added = 0;
        for (int i = 0; i < batch; i++) {
            if (seen.add(id(next++))) {
                added++;
            }
        }
        counter.keys += batch;
        return added;
    }

    private List<ClaimRequest> requests() {
        List<ClaimRequest> requests = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            requests.add(new ClaimRequest(new StoreKey("bench", id(next++)), FINGERPRINT, LEASE, RETENTION));
        }
        return requests;
    }

    /** A 36-character ID, unique per {@code n}. */
    private static String id(long n) {
        String digits = Long.toHexString(n | (1L << 47));
        return ID_PREFIX + digits;
    }

    /** A set of at most {@code bound} IDs, the oldest added forgotten first. Not thread-safe. */
    private static final class BoundedSet {
        private final LinkedHashSet<String> ids = new LinkedHashSet<>();
        private final int bound;

        BoundedSet(int bound) {
            this.bound = bound;
        }

        boolean add(String id) {
            if (!ids.add(id)) {
                return false;
            }
            if (ids.size() > bound) {
                ids.remove(ids.iterator().next());
            }
            return true;
        }
    }
}
