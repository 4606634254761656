package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.SequencedDedupStoreContract;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sequence guard's contract in Cluster mode, on a three-node Redis Cluster of the test's own: watermarks on
 * other slots than their events' keys (raised by a second call), and with a hash tag in the prefix (one slot, one
 * script).
 */
class RedisClusterSequencedDedupStoreTest extends SequencedDedupStoreContract {

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
    protected SequencedDedupStore createStore(ManualTicker ticker) {
        return store(prefix);
    }

    private static SequencedDedupStore store(String prefix) {
        return (SequencedDedupStore) PROVIDER.create(RedisDedupStoreTest.config(cluster.url(), prefix).with("cluster", true),
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
    void batchOverEverySlotRaisesWatermarksOnOtherSlotsAfterTheCompletions() {
        List<StoreKey> keys = new ArrayList<>();
        List<CompletionRequest> requests = new ArrayList<>();
        int otherSlot = 0;
        RedisKeys redisKeys = new RedisKeys(prefix);
        for (int i = 1; i <= 60; i++) {
            StoreKey key = key("event-" + i);
            StoreKey account = aggregate("account-" + i % 7);
            keys.add(key);
            Acquired owner = (Acquired) store().claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
            requests.add(new CompletionRequest(key, owner.token(), RETENTION, advanceTo(account, i)));
            if (SlotHash.getSlot(redisKeys.encode(key)) != SlotHash.getSlot(redisKeys.watermark(account))) {
                otherSlot++;
            }
        }
        assertThat(otherSlot).as("completions whose watermark lies on another slot").isPositive();

        assertThat(store().completeAll(requests)).containsOnly(CompletionResult.COMPLETED);

        for (int a = 0; a < 7; a++) {
            long highest = 0;
            for (int i = 1; i <= 60; i++) {
                if (i % 7 == a) {
                    highest = i;
                }
            }
            assertThat(store().watermark(aggregate("account-" + a))).as("account-%s", a).isEqualTo(highest);
        }
        assertThat(store().claim(keys.stream().map(k -> new ClaimRequest(k, null, LEASE, CLAIM_RETENTION)).toList()))
                .containsOnly(new Duplicate(true));
    }

    @Test
    void raiseThatFailsAfterItsCompletionLandedFailsTheCompletionAndARetryRaises() {
        RedisKeys redisKeys = new RedisKeys(prefix);
        StoreKey account = aggregate("account-1");
        StoreKey key = null;
        for (int i = 0; key == null; i++) {
            StoreKey candidate = key("event-" + i);
            if (SlotHash.getSlot(redisKeys.encode(candidate)) != SlotHash.getSlot(redisKeys.watermark(account))) {
                key = candidate;
            }
        }
        Acquired owner = acquire(key);
        byte[] watermark = redisKeys.watermark(account);
        keyspace.redis().set(watermark, "not ours".getBytes(StandardCharsets.US_ASCII));

        List<CompletionResult> results = store().completeAll(
                List.of(new CompletionRequest(key, owner.token(), RETENTION, advanceTo(account, 1))));

        assertThat(results.get(0)).isInstanceOfSatisfying(CompletionResult.Failed.class,
                failed -> assertThat(failed.cause()).hasMessageContaining("IDEMRECORD"));
        assertThat(claim(key)).as("the completion itself landed: not atomic across slots")
                .isEqualTo(new Duplicate(true));

        keyspace.redis().del(watermark);
        assertThat(store().completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 1)))
                .as("the completion retried by its owner").isTrue();
        assertThat(store().watermark(account)).isEqualTo(1);
    }

    @Test
    void hashTagInThePrefixPutsKeysAndWatermarksOnOneSlotAndRaisesInTheCompletionsOwnScript() {
        String tagged = "{" + UUID.randomUUID().toString().substring(0, 8) + "}:";
        RedisKeys redisKeys = new RedisKeys(tagged);
        StoreKey account = aggregate("account-1");
        StoreKey key = key("event-1");
        assertThat(SlotHash.getSlot(redisKeys.encode(key))).isEqualTo(SlotHash.getSlot(redisKeys.watermark(account)));
        try (SequencedDedupStore store = store(tagged)) {
            Acquired owner = (Acquired) store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
            byte[] watermark = redisKeys.watermark(account);
            keyspace.redis().set(watermark, "not ours".getBytes(StandardCharsets.US_ASCII));

            assertThat(store.completeAll(List.of(new CompletionRequest(key, owner.token(), RETENTION,
                    advanceTo(account, 1))))).singleElement().isInstanceOf(CompletionResult.Failed.class);
            assertThat(store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))))
                    .as("one script: the failed raise left the key claimed").singleElement()
                    .isInstanceOf(InProgress.class);

            keyspace.redis().del(watermark);
            assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 1))).isTrue();
            assertThat(store.watermark(account)).isEqualTo(1);
        } finally {
            keyspace.deleteAll(RedisKeyspace.glob(tagged));
        }
    }
}
