package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreKey;
import dev.idem.testkit.TestPluginConfig;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** The replies' contract and Redis's own reply tests with {@code pack-completed}: a reply goes with a packed completion. */
class RedisPackedReplyStoreTest extends RedisReplyStoreTest {

    @Override
    TestPluginConfig storeConfig(String url, String prefix) {
        return RedisPackedDedupStoreTest.packed(url, prefix);
    }

    /** No string: a field of the namespace's first bucket, naming the completion's token. */
    @Override
    void assertCompletedRecord(StoreKey key, long token) {
        RedisKeys keys = new RedisKeys(prefix);
        byte[] message = keys.encode(key);
        assertThat(keyspace.redis().exists(message)).isZero();
        byte[] value = keyspace.redis().hget(bucketZero(keys, key), key.id().getBytes(StandardCharsets.UTF_8));
        assertThat(value).startsWith(ByteBuffer.allocate(8).putLong(token).array());
    }

    /** The family key and its one bucket, as an eviction of both would leave it. */
    @Override
    void forgetCompletedRecord(StoreKey key) {
        RedisKeys keys = new RedisKeys(prefix);
        byte[] family = keys.namespaceFamilyOf(keys.encode(key), key.id().getBytes(StandardCharsets.UTF_8));
        keyspace.redis().del(family, bucketZero(keys, key));
    }

    private static byte[] bucketZero(RedisKeys keys, StoreKey key) {
        byte[] family = keys.namespaceFamilyOf(keys.encode(key), key.id().getBytes(StandardCharsets.UTF_8));
        byte[] bucket = java.util.Arrays.copyOf(family, family.length + 1);
        bucket[family.length] = '0';
        return bucket;
    }
}
