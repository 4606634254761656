package dev.idem.bench.scale;

import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.testkit.TestPluginConfig;
import java.util.ServiceLoader;
import java.util.function.UnaryOperator;

/**
 * A store under {@link StoreScaleBenchmark}: where its keys live, isolated from everything else on the server
 * (a key prefix, a schema, a database of the run's own), and how many bytes they take there.
 */
public interface ScaleStore extends AutoCloseable {

    /** The store named on a command line: {@code redis}, {@code postgresql} or {@code mariadb}. */
    static ScaleStore of(String name) {
        return switch (name) {
            case "redis" -> new RedisScaleStore();
            case "postgresql" -> JdbcScaleStore.postgresql();
            case "mariadb" -> JdbcScaleStore.mariadb();
            default -> throw new IllegalArgumentException("store must be redis, postgresql or mariadb, not " + name);
        };
    }

    /** The name given on the command line. */
    String name();

    /** What {@link #size} measures, for the table's heading. */
    String sizeSource();

    /** What {@link #compactedSize} does, for the table's heading; {@code null} when the store does not compact. */
    default String compaction() {
        return null;
    }

    /**
     * Removes whatever an earlier open left, prepares an empty place for the keys and creates the store on it
     * through its provider, with the settings {@code idem run} would use but for the place.
     */
    DedupStore open();

    /**
     * Another store on the place {@link #open} prepared, keeping the keys there: for a pipeline to run on, which
     * closes its store when it stops.
     */
    DedupStore another();

    /** The pipeline configuration's {@code store:} section for {@link #another}'s store, as one line of YAML. */
    String storeSection();

    /**
     * Puts {@code keys} more completed keys into {@code store}, as {@link StoreScaleBenchmark} fills it (namespace
     * {@code orders}, UUID IDs, SHA-256 fingerprints, 7 days; claims of 1,000 and one {@code completeAll} each, 4
     * threads).
     *
     * @return the nanoseconds it took
     */
    static long fill(DedupStore store, long keys) throws Exception {
        return Workload.fill(store, keys, 4);
    }

    /**
     * Puts {@code keys} more completed keys into the place, the fastest way the store's database allows, in the
     * format {@link #fill} writes: for sizes that the SPI would take hours to reach. By default {@link #fill}
     * itself.
     *
     * @return the nanoseconds it took
     */
    default long bulkFill(DedupStore store, long keys) throws Exception {
        return fill(store, keys);
    }

    /**
     * Whether {@code -Didem.bench.fill} asks for {@link #bulkFill}: {@code spi} (the default) or {@code bulk}.
     *
     * @throws IllegalArgumentException for any other value
     */
    static boolean bulkFillChosen() {
        String fill = System.getProperty("idem.bench.fill", "spi");
        return switch (fill) {
            case "spi" -> false;
            case "bulk" -> true;
            default -> throw new IllegalArgumentException("-Didem.bench.fill must be spi or bulk, not " + fill);
        };
    }

    /** What {@link #bulkFill} leaves on disk that {@link #fill} would not, for the figures' heading. */
    default String bulkFillNote() {
        return "through the SPI";
    }

    /** The bytes the keys take now (with the server's fixed overhead that {@link #open} found). */
    long size() throws Exception;

    /** Compacts the keys as the store's database can, then measures as {@link #size} does; -1 if it cannot. */
    default long compactedSize() throws Exception {
        return -1;
    }

    /**
     * After the fill, before the calls are timed: what the database's own background work would have done by
     * then (statistics, visibility). Nothing by default.
     */
    default void settle() throws Exception {
    }

    /** Removes the keys (prefix, schema, database) of this run; safe to call more than once. */
    void drop() throws Exception;

    @Override
    void close();

    /** A store of plugin {@code id}, created through its provider as {@code idem run} creates it. */
    static DedupStore create(String id, UnaryOperator<TestPluginConfig> settings) {
        DedupStoreProvider provider = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals(id)).findFirst().orElseThrow();
        return provider.create(settings.apply(TestPluginConfig.defaults("store." + id, provider.configSpec())),
                StoreContext.system());
    }
}
