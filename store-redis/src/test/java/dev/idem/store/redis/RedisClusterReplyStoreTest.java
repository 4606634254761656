package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.ReplyStoreContract;
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
 * The replies' contract in Cluster mode, on a three-node Redis Cluster of the test's own: each message key's reply on
 * its own slot, written by the completion's script; also with a hash tag in the prefix and with a prefix that opens a
 * brace it never closes.
 */
class RedisClusterReplyStoreTest extends ReplyStoreContract {

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
    protected ReplyStore createStore(ManualTicker ticker) {
        return store(prefix);
    }

    private static ReplyStore store(String prefix) {
        return (ReplyStore) PROVIDER.create(RedisDedupStoreTest.config(cluster.url(), prefix).with("cluster", true),
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
    void keysOnEverySlotCompleteWithTheirRepliesAloneAndInOneBatch() {
        List<CompletionRequest> batch = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            StoreKey alone = key("alone-" + i);
            assertThat(store().completeWithReply(alone, acquire(alone).token(), RETENTION, reply("alone " + i)))
                    .isTrue();
            StoreKey batched = key("batched-" + i);
            batch.add(new CompletionRequest(batched, acquire(batched).token(), RETENTION, null, reply("batched " + i)));
        }

        assertThat(store().completeAll(batch)).containsOnly(CompletionResult.COMPLETED);

        for (int i = 0; i < 60; i++) {
            assertThat(store().reply(key("alone-" + i))).contains(reply("alone " + i));
            assertThat(store().reply(key("batched-" + i))).contains(reply("batched " + i));
        }
    }

    @Test
    void hashTagOrAnUnclosedBraceInThePrefixStillPutsTheReplyOnTheKeysSlot() {
        for (String shape : new String[] {"{" + UUID.randomUUID().toString().substring(0, 8) + "}:",
                "open{" + UUID.randomUUID().toString().substring(0, 8) + ":"}) {
            try (ReplyStore store = store(shape)) {
                for (int i = 0; i < 20; i++) {
                    StoreKey key = key("order-" + i);
                    Acquired owner = (Acquired) store.claim(List.of(new ClaimRequest(key, null, LEASE,
                            CLAIM_RETENTION))).get(0);
                    assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("r" + i))).as(shape)
                            .isTrue();
                    assertThat(store.reply(key)).contains(reply("r" + i));
                }
            } finally {
                keyspace.deleteAll(RedisKeyspace.glob(shape));
            }
        }
    }

    @Test
    void prefixOpeningWithEmptyBracesRefusesRepliesNamingWhyAndWritesNothing() {
        String shape = "{}" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (ReplyStore store = store(shape)) {
            StoreKey key = key("order-1");
            Acquired owner = (Acquired) store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)))
                    .get(0);

            assertThatThrownBy(() -> store.completeWithReply(key, owner.token(), RETENTION, reply("r")))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                    .hasMessageContaining("first braces hold nothing");
            assertThatThrownBy(() -> store.completeAll(List.of(new CompletionRequest(key, owner.token(), RETENTION,
                    null, reply("r"))))).isInstanceOf(StoreException.class);
            assertThatThrownBy(() -> store.reply(key)).isInstanceOf(StoreException.class);

            ClaimResult again = store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
            assertThat(again).as("still claimed: nothing was written").isInstanceOf(ClaimResult.InProgress.class);
            assertThat(store.complete(key, owner.token(), RETENTION)).as("completes without a reply").isTrue();
        } finally {
            keyspace.deleteAll(RedisKeyspace.glob(shape));
        }
    }
}
