package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreContext;
import dev.idem.testkit.ManualTicker;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PackingCheckTest {

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
    void limitsBelowABucketsNeedsAreTooSmallByEitherName() {
        assertThat(PackingCheck.tooSmall(Map.of("hash-max-listpack-entries", "128", "hash-max-listpack-value", "32")))
                .hasValue("128 fields of 32 bytes");
        assertThat(PackingCheck.tooSmall(Map.of("hash-max-ziplist-entries", "64", "hash-max-ziplist-value", "64")))
                .hasValue("64 fields of 64 bytes");
    }

    @Test
    void theDefaultsLargerLimitsOrAReplyWithoutThemAreNotTooSmall() {
        assertThat(PackingCheck.tooSmall(Map.of("hash-max-listpack-entries", "128", "hash-max-listpack-value", "64")))
                .isEmpty();
        assertThat(PackingCheck.tooSmall(Map.of("hash-max-ziplist-entries", "512", "hash-max-ziplist-value", "64",
                "hash-max-listpack-entries", "512", "hash-max-listpack-value", "64"))).isEmpty();
        assertThat(PackingCheck.tooSmall(Map.of())).isEmpty();
    }

    @Test
    void aPackingStoreWarnsAtStartWhenTheServerWouldKeepItsBucketsAsHashTables() {
        Map<String, String> before = keyspace.redis().configGet("hash-max-listpack-value");
        try {
            keyspace.redis().configSet("hash-max-listpack-value", "32");
            assertThat(warningsOfANewStore(true)).singleElement().asString()
                    .contains("fields of 32 bytes").contains("hash-max-listpack-value").contains("pack-completed");
            assertThat(warningsOfANewStore(false)).as("a store that does not pack").isEmpty();

            keyspace.redis().configSet("hash-max-listpack-value", "64");
            assertThat(warningsOfANewStore(true)).isEmpty();
        } finally {
            keyspace.redis().configSet("hash-max-listpack-value", before.get("hash-max-listpack-value"));
        }
    }

    private static List<String> warningsOfANewStore(boolean pack) {
        try (RedisDedupStore store = (RedisDedupStore) PROVIDER.create(
                RedisDedupStoreTest.config(url, "idem-packing:").with("pack-completed", pack),
                new StoreContext(new ManualTicker()))) {
            return store.warnIfBucketsWouldNotPack();
        }
    }
}
