package dev.idem.store.redis;

import dev.idem.testkit.TestPluginConfig;

/** The sequence guard's contract and Redis's own watermark tests with {@code pack-completed}. */
class RedisPackedSequencedDedupStoreTest extends RedisSequencedDedupStoreTest {

    @Override
    TestPluginConfig storeConfig(String url, String prefix) {
        return RedisPackedDedupStoreTest.packed(url, prefix);
    }
}
