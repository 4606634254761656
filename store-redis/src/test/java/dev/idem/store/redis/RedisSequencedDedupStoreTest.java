package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.SequencedDedupStoreContract;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The sequence guard's contract against a real Redis, plus how the watermarks are stored there. */
class RedisSequencedDedupStoreTest extends SequencedDedupStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    /** Every key of this class starts with it; deleted after the class. */
    private static final String CLASS_PREFIX = "idem-test-seq-" + UUID.randomUUID().toString().substring(0, 8) + "-";

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
        return (SequencedDedupStore) PROVIDER.create(storeConfig(url, prefix), new StoreContext(ticker));
    }

    /** The store's configuration; a subclass runs the same tests on another. */
    TestPluginConfig storeConfig(String url, String prefix) {
        return RedisDedupStoreTest.config(url, prefix);
    }

    /** Moves the TTLs (and lease deadlines) of this test's keys, watermarks included, back. */
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
    void watermarkIsAKeyOfItsOwnHoldingTheNumberWithTheRetentionAsItsTtl() {
        completeAndAdvance(key("event-5"), aggregate("account-7"), 5);

        byte[] name = watermarkKey("account-7");
        assertThat(text(name)).isEqualTo(prefix + "seq:" + namespace().length() + ":" + namespace() + ":account-7");
        assertThat(text(keyspace.redis().get(name))).isEqualTo("5");
        assertThat(keyspace.redis().pttl(name)).isBetween(SEQUENCE_RETENTION.minusSeconds(5).toMillis(),
                SEQUENCE_RETENTION.toMillis());

        keyspace.redis().pexpire(name, 60_000);
        completeAndAdvance(key("event-3"), aggregate("account-7"), 3);
        assertThat(text(keyspace.redis().get(name))).as("not lowered").isEqualTo("5");
        assertThat(keyspace.redis().pttl(name)).as("the TTL, set again")
                .isGreaterThan(SEQUENCE_RETENTION.minusSeconds(5).toMillis());
    }

    @Test
    void zeroRetentionForgetsTheWatermarkAtOnce() {
        StoreKey key = key("event-1");
        Acquired owner = acquire(key);

        assertThat(store().completeAndAdvance(key, owner.token(), RETENTION,
                new SequenceAdvance(aggregate("account-1"), 1, Duration.ZERO))).isTrue();

        assertThat(keyspace.redis().exists(watermarkKey("account-1"))).isZero();
        assertThat(store().watermark(aggregate("account-1"))).isZero();
    }

    @Test
    void statsCountNoWatermark() {
        completeAndAdvance(key("event-1"), aggregate("account-1"), 1);
        acquire(key("event-2"));

        assertThat(((InspectableDedupStore) store()).stats()).isEqualTo(new StoreStats(1, 1, false));
    }

    @Test
    void watermarkKeyHoldingAnotherApplicationsValueFailsItsCompletionBeforeItWritesAndOnlyThatOne() {
        keyspace.redis().set(watermarkKey("foreign"), "not a number".getBytes(StandardCharsets.US_ASCII));
        StoreKey blocked = key("event-blocked");
        StoreKey fine = key("event-fine");
        Acquired blockedOwner = acquire(blocked);
        Acquired fineOwner = acquire(fine);

        assertThatThrownBy(() -> store().watermark(aggregate("foreign")))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("not an Idem record");
        assertThatThrownBy(() -> store().completeAndAdvance(blocked, blockedOwner.token(), RETENTION,
                advanceTo(aggregate("foreign"), 1)))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("IDEMRECORD");
        List<CompletionResult> results = store().completeAll(List.of(
                new CompletionRequest(blocked, blockedOwner.token(), RETENTION, advanceTo(aggregate("foreign"), 1)),
                new CompletionRequest(fine, fineOwner.token(), RETENTION, advanceTo(aggregate("account-1"), 1))));

        assertThat(results.get(0)).isInstanceOf(CompletionResult.Failed.class);
        assertThat(results.get(1)).isEqualTo(CompletionResult.COMPLETED);
        assertThat(claim(blocked)).as("the key whose watermark could not be raised, left claimed")
                .isInstanceOf(InProgress.class);
        assertThat(store().watermark(aggregate("account-1"))).isEqualTo(1);
        assertThat(text(keyspace.redis().get(watermarkKey("foreign")))).isEqualTo("not a number");
    }

    @Test
    void scriptsFlushedFromTheServerAreSentAgainInFull() {
        keyspace.redis().scriptFlush();
        completeAndAdvance(key("event-1"), aggregate("account-1"), 1);

        assertThat(store().watermark(aggregate("account-1"))).isEqualTo(1);
    }

    @Test
    void aBatchOfOneCallRaisesAWatermarkSeveralTimesInRequestOrder() {
        StoreKey account = aggregate("account-1");
        List<StoreKey> keys = List.of(key("e-2"), key("e-10"), key("e-9"), key("e-11"));
        List<Long> numbers = List.of(2L, 10L, 9L, 11L);
        List<CompletionRequest> requests = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            Acquired owner = (Acquired) store().claim(List.of(new ClaimRequest(keys.get(i), null, LEASE, CLAIM_RETENTION)))
                    .get(0);
            requests.add(new CompletionRequest(keys.get(i), owner.token(), RETENTION, advanceTo(account, numbers.get(i))));
        }

        assertThat(store().completeAll(requests)).containsOnly(CompletionResult.COMPLETED);

        assertThat(store().watermark(account)).as("compared as numbers, not as text: 11 > 9 > 2").isEqualTo(11);
    }

    private byte[] watermarkKey(String aggregate) {
        return new RedisKeys(prefix).watermark(aggregate(aggregate));
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
