package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.StepStoreContract;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The durable steps' contract in Cluster mode, on a three-node Redis Cluster of the test's own: each message key's
 * steps on its own slot, one script touching both; also with a hash tag in the prefix and with a prefix that opens a
 * brace it never closes.
 */
class RedisClusterStepStoreTest extends StepStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();

    @TempDir
    static Path dir;
    private static RedisTestCluster cluster;
    private static RedisKeyspace keyspace;

    private final String prefix = "idem-" + UUID.randomUUID().toString().substring(0, 8) + ":";

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = RedisTestCluster.start(dir, 3);
        keyspace = RedisKeyspace.cluster(cluster.url());
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (keyspace != null) {
            keyspace.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Override
    protected StepStore createStore(ManualTicker ticker) {
        return store(prefix);
    }

    private static StepStore store(String prefix) {
        return (StepStore) PROVIDER.create(RedisDedupStoreTest.config(cluster.url(), prefix).with("cluster", true),
                new StoreContext(new ManualTicker()));
    }

    @Override
    protected void advanceStoreClock(Duration duration) {
        keyspace.advance(RedisKeyspace.glob(prefix, namespace()), duration);
    }

    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    @Test
    void keysOnEverySlotRecordAndReadTheirSteps() {
        for (int i = 0; i < 60; i++) {
            StoreKey key = key("order-" + i);
            Acquired owner = acquire(key);
            assertThat(store().recordStep(key, owner.token(), "charge", utf8("ch_" + i))).isTrue();
            assertThat(stepsOf(key, owner).get("charge")).isEqualTo(utf8("ch_" + i));
        }
    }

    @Test
    void hashTagOrAnUnclosedBraceInThePrefixStillPutsTheStepsOnTheKeysSlot() {
        for (String shape : new String[] {"{" + UUID.randomUUID().toString().substring(0, 8) + "}:",
                "open{" + UUID.randomUUID().toString().substring(0, 8) + ":"}) {
            try (StepStore store = store(shape)) {
                for (int i = 0; i < 20; i++) {
                    StoreKey key = key("order-" + i);
                    Acquired owner = (Acquired) store.claim(List.of(new ClaimRequest(key, null, LEASE,
                            CLAIM_RETENTION))).get(0);
                    assertThat(store.recordStep(key, owner.token(), "charge", utf8("v"))).as(shape).isTrue();
                    assertThat(store.steps(key, owner.token()).orElseThrow()).containsOnlyKeys("charge");
                }
            } finally {
                keyspace.deleteAll(RedisKeyspace.glob(shape));
            }
        }
    }

    @Test
    void prefixOpeningWithEmptyBracesRefusesStepsNamingWhy() {
        String shape = "{}" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (StepStore store = store(shape)) {
            StoreKey key = key("order-1");
            Acquired owner = (Acquired) store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)))
                    .get(0);

            assertThatThrownBy(() -> store.recordStep(key, owner.token(), "charge", utf8("v")))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                    .hasMessageContaining("first braces hold nothing");
        } finally {
            keyspace.deleteAll(RedisKeyspace.glob(shape));
        }
    }
}
