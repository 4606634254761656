package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreContext;
import dev.idem.testkit.ManualTicker;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class EvictionCheckTest {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();

    private static String url;
    private static RedisKeyspace keyspace;

    @BeforeAll
    static void connect() {
        url = RedisTestServer.url();
        keyspace = RedisKeyspace.standalone(url);
    }

    @AfterAll
    static void close() {
        if (keyspace != null) {
            keyspace.close();
        }
    }

    @Test
    void aMemoryLimitWithAnEvictingPolicyIsARisk() {
        assertThat(EvictionCheck.risk("# Memory\r\nused_memory:1000\r\nmaxmemory:1073741824\r\n"
                + "maxmemory_human:1.00G\r\nmaxmemory_policy:volatile-lru\r\n"))
                .hasValue("maxmemory-policy volatile-lru, maxmemory 1073741824 bytes");
        assertThat(EvictionCheck.risk("maxmemory:1073741824\nmaxmemory_policy:allkeys-lfu\n"))
                .hasValue("maxmemory-policy allkeys-lfu, maxmemory 1073741824 bytes");
    }

    @Test
    void noLimitNoevictionOrAReplyWithoutTheFieldsIsNone() {
        assertThat(EvictionCheck.risk("maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n")).isEmpty();
        assertThat(EvictionCheck.risk("maxmemory:1073741824\r\nmaxmemory_policy:noeviction\r\n")).isEmpty();
        assertThat(EvictionCheck.risk("# Memory\r\nused_memory:1000\r\n")).isEmpty();
    }

    @Test
    void theStoreWarnsAtStartWhenTheServerMayEvictItsKeys() {
        Map<String, String> before = keyspace.redis().configGet("maxmemory", "maxmemory-policy");
        try {
            // Far above what the tests use, so that nothing is evicted while it is set.
            keyspace.redis().configSet("maxmemory", "8gb");
            keyspace.redis().configSet("maxmemory-policy", "volatile-lru");
            assertThat(warningsOfANewStore()).singleElement().asString()
                    .contains("maxmemory-policy volatile-lru").contains("noeviction");

            keyspace.redis().configSet("maxmemory-policy", "noeviction");
            assertThat(warningsOfANewStore()).isEmpty();
        } finally {
            keyspace.redis().configSet("maxmemory-policy", before.get("maxmemory-policy"));
            keyspace.redis().configSet("maxmemory", before.get("maxmemory"));
        }
    }

    private static List<String> warningsOfANewStore() {
        try (RedisDedupStore store = (RedisDedupStore) PROVIDER.create(RedisDedupStoreTest.config(url, "idem-eviction:"),
                new StoreContext(new ManualTicker()))) {
            return store.warnIfKeysMayBeEvicted();
        }
    }
}
