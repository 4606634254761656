package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredReply;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.ReplyStoreContract;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The replies' contract against a real Redis, plus how the replies are stored there. */
class RedisReplyStoreTest extends ReplyStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    /** Every key of this class starts with it; deleted after the class. */
    private static final String CLASS_PREFIX = "idem-test-replies-" + UUID.randomUUID().toString().substring(0, 8)
            + "-";

    final String prefix = CLASS_PREFIX + UUID.randomUUID().toString().substring(0, 8) + ":";

    private static String url;
    static RedisKeyspace keyspace;

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
    protected ReplyStore createStore(ManualTicker ticker) {
        return (ReplyStore) PROVIDER.create(storeConfig(url, prefix), new StoreContext(ticker));
    }

    /** The store's configuration; a subclass runs the same tests on another. */
    TestPluginConfig storeConfig(String url, String prefix) {
        return RedisDedupStoreTest.config(url, prefix);
    }

    /** Moves the TTLs (and lease deadlines) of this test's keys, replies included, back. */
    @Override
    protected void advanceStoreClock(Duration duration) {
        keyspace.advance(RedisKeyspace.glob(prefix, namespace()), duration);
    }

    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    // ---------------------------------------------------------------- what is stored

    @Test
    void replyIsAStringOnTheKeysSlotNamingItsCompletionsTokenWithTheCompletionsTtl() {
        StoreKey key = key("order-7");
        Acquired owner = acquire(key);
        StoredReply sent = new StoredReply(utf8("{\"ok\":true}"), Map.of("correlation-id", "c-7"));

        assertThat(store().completeWithReply(key, owner.token(), RETENTION, sent)).isTrue();

        RedisKeys keys = new RedisKeys(prefix);
        byte[] name = keys.reply(key);
        assertThat(text(name)).startsWith(prefix + "reply:{")
                .endsWith("}:" + namespace().length() + ":" + namespace() + ":order-7");
        assertThat(SlotHash.getSlot(name)).as("on the message key's slot").isEqualTo(SlotHash.getSlot(keys.encode(key)));
        byte[] token = java.nio.ByteBuffer.allocate(8).putLong(owner.token()).array();
        assertThat(keyspace.redis().get(name)).startsWith(new byte[] {'t'}).endsWith(utf8("22|14:correlation-id3:c-7{\"ok\":true}"))
                .containsSequence(token);
        assertThat(keyspace.redis().pttl(name)).isBetween(RETENTION.minusSeconds(5).toMillis(), RETENTION.toMillis());
        assertCompletedRecord(key, owner.token());
    }

    /** Asserts the completed record {@code key} has, as without a reply, in the form this test's store writes. */
    void assertCompletedRecord(StoreKey key, long token) {
        assertThat(keyspace.redis().get(new RedisKeys(prefix).encode(key))).as("the completed record, as without a reply")
                .isEqualTo(RedisDedupStoreTest.completed(token, 1, ""));
    }

    /** Removes {@code key}'s completed record, as an eviction or a person would, leaving its reply key. */
    void forgetCompletedRecord(StoreKey key) {
        keyspace.redis().del(new RedisKeys(prefix).encode(key));
    }

    @Test
    void keyCompletedWithoutAReplyHasNoReplyKey() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(keyspace.redis().exists(new RedisKeys(prefix).reply(key))).isZero();
    }

    @Test
    void replyOfAnEarlierLifeLeftBehindIsNeverShown() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store().completeWithReply(key, owner.token(), RETENTION, reply("earlier"))).isTrue();
        // The record is gone (evicted, or deleted by hand) while its reply key still lives.
        forgetCompletedRecord(key);

        Acquired fresh = acquire(key);
        assertThat(store().complete(key, fresh.token(), RETENTION)).isTrue();

        assertThat(keyspace.redis().exists(new RedisKeys(prefix).reply(key))).as("left to its TTL").isEqualTo(1);
        assertThat(store().reply(key)).isEmpty();
    }

    @Test
    void statsCountNoReplyKey() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store().completeWithReply(key, owner.token(), RETENTION, reply("r"))).isTrue();
        acquire(key("order-2"));

        assertThat(((InspectableDedupStore) store()).stats()).isEqualTo(new StoreStats(1, 1, false));
    }

    @Test
    void everyPrefixShapeGivesAReplyKeyOnTheMessageKeysSlot() {
        for (String shape : new String[] {"idem:", "{idem}:", "open{idem:", "x{", "{}"}) {
            RedisKeys keys = new RedisKeys(shape);
            for (int i = 0; i < 200; i++) {
                StoreKey key = new StoreKey("ns-" + i % 3, "order-" + i + (i % 7 == 0 ? "{tag" + i + "}" : "")
                        + (i % 11 == 0 ? "}" : ""));
                boolean onSlot = SlotHash.getSlot(keys.reply(key)) == SlotHash.getSlot(keys.encode(key));
                assertThat(keys.replyOnSlot(key)).isEqualTo(onSlot);
                assertThat(keys.isReply(keys.reply(key))).isTrue();
                assertThat(keys.isReply(keys.steps(key))).isFalse();
                assertThat(keys.isSteps(keys.reply(key))).isFalse();
                assertThat(keys.isReply(keys.encode(key))).isFalse();
                if (!shape.equals("{}")) {
                    assertThat(onSlot).as("prefix '%s', key %s", shape, key).isTrue();
                }
            }
        }
    }

    @Test
    void encodingGivesBackEveryReplyExactlyAndRefusesWhatItDidNotWrite() {
        StoredReply[] replies = {
            new StoredReply(new byte[0]),
            new StoredReply(utf8("12:x|3:abc"), Map.of("12", "|", "", "", "a:b", "3:x")),
            new StoredReply(new byte[] {'|', ':', 0, -1}, Map.of("lone \ud800 surrogate", "\udfff\u00e9\ud83d\ude00")),
        };
        for (StoredReply reply : replies) {
            assertThat(RedisReplies.decode(RedisReplies.encode(reply))).isEqualTo(reply);
        }
        for (String garbage : new String[] {"", "|", "x|", "5|1:a", "4|9:abcd", "4|1:a", "99999999999|"}) {
            assertThatThrownBy(() -> RedisReplies.decode(utf8(garbage))).as("'%s'", garbage)
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
