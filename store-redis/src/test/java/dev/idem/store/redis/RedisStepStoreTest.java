package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.StepStoreContract;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The durable steps' contract against a real Redis, plus how the steps are stored there. */
class RedisStepStoreTest extends StepStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    /** Every key of this class starts with it; deleted after the class. */
    private static final String CLASS_PREFIX = "idem-test-steps-" + UUID.randomUUID().toString().substring(0, 8) + "-";

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
    protected StepStore createStore(ManualTicker ticker) {
        return (StepStore) PROVIDER.create(RedisDedupStoreTest.config(url, prefix), new StoreContext(ticker));
    }

    /** Moves the TTLs (and lease deadlines) of this test's keys, steps included, back. */
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
    void stepsAreAHashOnTheKeysSlotWhoseTtlIsTheClaimRetentionFromTheRecord() {
        StoreKey key = key("order-7");
        Acquired owner = acquire(key);
        assertThat(store().recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();

        RedisKeys keys = new RedisKeys(prefix);
        byte[] name = keys.steps(key);
        assertThat(text(name)).startsWith(prefix + "steps:{")
                .endsWith("}:" + namespace().length() + ":" + namespace() + ":order-7");
        assertThat(SlotHash.getSlot(name)).as("on the message key's slot").isEqualTo(SlotHash.getSlot(keys.encode(key)));
        assertThat(keyspace.redis().hget(name, utf8("charge"))).isEqualTo(utf8("ch_1"));
        assertThat(keyspace.redis().pttl(name)).isBetween(CLAIM_RETENTION.minusSeconds(5).toMillis(),
                CLAIM_RETENTION.toMillis());
    }

    @Test
    void statsCountNoStepsKey() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store().recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();
        acquire(key("order-2"));

        assertThat(((InspectableDedupStore) store()).stats()).isEqualTo(new StoreStats(1, 1, false));
    }

    @Test
    void everyPrefixShapeGivesAStepsKeyOnTheMessageKeysSlot() {
        for (String shape : new String[] {"idem:", "{idem}:", "open{idem:", "x{", "{}"}) {
            RedisKeys keys = new RedisKeys(shape);
            for (int i = 0; i < 200; i++) {
                StoreKey key = new StoreKey("ns-" + i % 3, "order-" + i + (i % 7 == 0 ? "{tag" + i + "}" : "")
                        + (i % 11 == 0 ? "}" : ""));
                boolean onSlot = SlotHash.getSlot(keys.steps(key)) == SlotHash.getSlot(keys.encode(key));
                assertThat(keys.stepsOnSlot(key)).isEqualTo(onSlot);
                if (!shape.equals("{}")) {
                    assertThat(onSlot).as("prefix '%s', key %s", shape, key).isTrue();
                }
            }
        }
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
