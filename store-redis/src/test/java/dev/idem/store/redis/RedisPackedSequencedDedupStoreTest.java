package dev.idem.store.redis;

import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.SequencedDedupStoreContract;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The sequence guard's contract against a real Redis with {@code pack-completed}: completions raise as they pack. */
class RedisPackedSequencedDedupStoreTest extends SequencedDedupStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final String CLASS_PREFIX = "idem-test-packed-seq-" + UUID.randomUUID().toString().substring(0, 8)
            + "-";

    private final String prefix = CLASS_PREFIX + UUID.randomUUID().toString().substring(0, 8) + ":";

    private static String url;
    private static RedisKeyspace keyspace;

    @BeforeAll
    static void connect() {
        url = RedisTestServer.contractUrl();
        keyspace = RedisKeyspace.standalone(url);
    }

    @AfterAll
    static void deleteThisClassesKeys() {
        if (keyspace != null) {
            keyspace.deleteAll(RedisKeyspace.glob(CLASS_PREFIX));
            keyspace.close();
        }
    }

    @Override
    protected SequencedDedupStore createStore(ManualTicker ticker) {
        return (SequencedDedupStore) PROVIDER.create(RedisPackedDedupStoreTest.packed(url, prefix),
                new StoreContext(ticker));
    }

    @Override
    protected void advanceStoreClock(Duration duration) {
        keyspace.advance(RedisKeyspace.glob(prefix, namespace()), duration);
    }

    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }
}
