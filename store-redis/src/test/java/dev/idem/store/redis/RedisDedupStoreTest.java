package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.testkit.InspectableDedupStoreContract;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The store against a real Redis: the whole contract, plus what is particular to Redis. */
class RedisDedupStoreTest extends InspectableDedupStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    /** Every key of this class starts with it; each test adds a part of its own, so stats see only its keys. */
    private static final String CLASS_PREFIX = "idem-test-" + UUID.randomUUID().toString().substring(0, 8) + "-";

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

    static TestPluginConfig config(String url, String prefix) {
        return TestPluginConfig.defaults("store.redis", PROVIDER.configSpec())
                .with("uri", url)
                .with("key-prefix", prefix);
    }

    @Override
    protected InspectableDedupStore createInspectableStore(ManualTicker ticker) {
        return (InspectableDedupStore) PROVIDER.create(config(url, prefix), new StoreContext(ticker));
    }

    @Override
    protected void advanceStoreClock(Duration duration) {
        keyspace.advance(RedisKeyspace.glob(prefix, namespace()), duration);
    }

    /** A value another application wrote under the prefix: the store refuses to touch the key. */
    @Override
    protected boolean failWritesOf(StoreKey key) {
        keyspace.redis().set(new RedisKeys(prefix).encode(key), ascii("not ours"));
        return true;
    }

    /** Real time passes on the server between a test's calls; a second covers a loaded machine, as for JDBC. */
    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    // ---------------------------------------------------------------- what is stored

    @Test
    void keyIsPrefixNamespaceLengthNamespaceAndIdAndHoldsAReadableRecord() {
        StoreKey key = key("order-42");
        Acquired owner = claim(key, "sha256:aa");

        String name = prefix + namespace().length() + ":" + namespace() + ":order-42";
        String value = get(name);
        assertThat(value).startsWith("C|" + owner.token() + "|1|").endsWith("|300000|=sha256:aa");

        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();
        assertThat(bytes(name)).isEqualTo(completed(owner.token(), 1, "=sha256:aa"));
    }

    @Test
    void completedKeyWithASha256FingerprintHoldsItRawInAValueRedisEmbedsInItsObject() {
        // What keeps a completed key small (StoreScaleBenchmark): the token in 8 bytes, the fingerprint's 32 raw
        // bytes, 43 bytes in all, under the 44 that Redis embeds in the key's object (embstr).
        String fingerprint = RedisEarlierRecordsTest.sha256("payload");
        StoreKey key = key("order-42");
        Acquired owner = claim(key, fingerprint);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        byte[] name = new RedisKeys(prefix).encode(key);
        byte[] raw = java.util.Base64.getUrlDecoder().decode(fingerprint);
        byte[] stored = new byte[33];
        stored[0] = '#';
        System.arraycopy(raw, 0, stored, 1, 32);
        assertThat(keyspace.redis().get(name)).isEqualTo(completed(owner.token(), 1, stored)).hasSize(43);
        assertThat(keyspace.redis().objectEncoding(name)).isEqualTo("embstr");
        assertThat(inspectable().inspect(key).orElseThrow().fingerprint()).isEqualTo(fingerprint);
        assertThat(store().claim(List.of(new ClaimRequest(key, fingerprint, LEASE, CLAIM_RETENTION))))
                .containsExactly(new Duplicate(true));
        // The same 32 bytes in a text Base64 would also decode them from (unused low bits set): another fingerprint.
        String sibling = fingerprint.substring(0, 42) + (char) (fingerprint.charAt(42) + 1);
        assertThat(java.util.Base64.getUrlDecoder().decode(sibling)).isEqualTo(raw);
        assertThat(store().claim(List.of(new ClaimRequest(key, sibling, LEASE, CLAIM_RETENTION))))
                .containsExactly(new Duplicate(false));
    }

    @Test
    void fingerprintThatBase64WouldNotWriteBackKeepsItsText() {
        String fingerprint = RedisEarlierRecordsTest.sha256("payload");
        String sibling = fingerprint.substring(0, 42) + (char) (fingerprint.charAt(42) + 1);
        StoreKey key = key("order-43");
        Acquired owner = claim(key, sibling);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(keyspace.redis().get(new RedisKeys(prefix).encode(key)))
                .isEqualTo(completed(owner.token(), 1, "=" + sibling));
        assertThat(inspectable().inspect(key).orElseThrow().fingerprint()).isEqualTo(sibling);
    }

    @Test
    void completeAllWritesTheRecordAndTtlThatCompleteWrites() {
        StoreKey single = key("single");
        StoreKey batched = key("batched");
        Acquired one = claim(single, "sha256:aa");
        Acquired other = claim(batched, "sha256:aa");
        assertThat(store().recordStart(batched, other.token())).isEqualTo(1);

        assertThat(store().complete(single, one.token(), RETENTION)).isTrue();
        assertThat(store().completeAll(List.of(new CompletionRequest(batched, other.token(), RETENTION))))
                .containsExactly(CompletionResult.COMPLETED);

        String prefixOfNames = prefix + namespace().length() + ":" + namespace() + ":";
        assertThat(bytes(prefixOfNames + "single")).isEqualTo(completed(one.token(), 1, "=sha256:aa"));
        assertThat(bytes(prefixOfNames + "batched")).as("starts are not kept once completed")
                .isEqualTo(completed(other.token(), 1, "=sha256:aa"));
        assertThat(keyspace.redis().pttl((prefixOfNames + "batched").getBytes(StandardCharsets.UTF_8)))
                .isBetween(RETENTION.minusSeconds(5).toMillis(), RETENTION.toMillis());
    }

    @Test
    void recordedStartsJoinTheClaimRecordOnlyOnceThereIsOneAndLeaveItWithTheCompletion() {
        // Digits and bars in the fingerprint must not be taken for the starts field.
        StoreKey key = key("order-42");
        String fingerprint = "7|8|";
        Acquired first = claim(key, fingerprint);
        String name = prefix + namespace().length() + ":" + namespace() + ":order-42";
        long ttlBefore = keyspace.redis().pttl(name.getBytes(StandardCharsets.UTF_8));
        assertThat(get(name)).as("no start recorded: the short form").startsWith("C|" + first.token() + "|1|")
                .endsWith("|300000|=7|8|");

        assertThat(store().recordStart(key, first.token())).isEqualTo(1);
        assertThat(get(name)).startsWith("C|" + first.token() + "|1|").endsWith("|300000|1|=7|8|");
        assertThat(keyspace.redis().pttl(name.getBytes(StandardCharsets.UTF_8))).as("the TTL, kept")
                .isBetween(ttlBefore - 5_000, ttlBefore);

        advance(LEASE);
        Acquired second = claim(key, fingerprint);
        assertThat(second.attempt()).isEqualTo(2);
        assertThat(get(name)).as("taken over, starts kept").startsWith("C|" + second.token() + "|2|")
                .endsWith("|300000|1|=7|8|");
        assertThat(store().recordStart(key, second.token())).isEqualTo(2);

        assertThat(store().complete(key, second.token(), RETENTION)).isTrue();
        assertThat(bytes(name)).isEqualTo(completed(second.token(), 2, "=7|8|"));
        assertThat(store().claim(List.of(new ClaimRequest(key, "7|8|", LEASE, CLAIM_RETENTION))))
                .containsExactly(new Duplicate(true));
        assertThat(store().claim(List.of(new ClaimRequest(key, "1|=7|8|", LEASE, CLAIM_RETENTION))))
                .containsExactly(new Duplicate(false));
    }

    @Test
    void claimRecordWrittenBeforeStartsWereRecordedIsTakenOverWithNoStarts() {
        // The short form is what stores from before recordStart wrote; a key they left behind mid-claim
        // is taken over as usual, and counts its starts from there.
        StoreKey key = key("order-1");
        String name = prefix + namespace().length() + ":" + namespace() + ":order-1";
        keyspace.redis().set(name.getBytes(StandardCharsets.UTF_8), ascii("C|77|3|1|300000|=sha256:aa"),
                SetArgs.Builder.px(CLAIM_RETENTION.toMillis()));

        Acquired owner = claim(key, "sha256:aa");

        assertThat(owner.attempt()).isEqualTo(4);
        assertThat(store().recordStart(key, owner.token())).isEqualTo(1);
    }

    @Test
    void claimLivesForLeasePlusClaimRetentionAndCompletedKeyForRetention() {
        StoreKey key = key("order-1");
        Acquired owner = claim(key, null);
        byte[] name = new RedisKeys(prefix).encode(key);

        assertThat(keyspace.redis().pttl(name)).isBetween(LEASE.plus(CLAIM_RETENTION).minusSeconds(5).toMillis(),
                LEASE.plus(CLAIM_RETENTION).toMillis());

        store().complete(key, owner.token(), RETENTION);
        assertThat(keyspace.redis().pttl(name)).isBetween(RETENTION.minusSeconds(5).toMillis(), RETENTION.toMillis());
    }

    @Test
    void renewSetsTheTtlToTheNewLeasePlusTheClaimRetention() {
        StoreKey key = key("order-1");
        Acquired owner = claim(key, null);
        byte[] name = new RedisKeys(prefix).encode(key);

        assertThat(store().renew(key, owner.token(), Duration.ofMinutes(10))).isTrue();

        Duration expected = Duration.ofMinutes(10).plus(CLAIM_RETENTION);
        assertThat(keyspace.redis().pttl(name)).isBetween(expected.minusSeconds(5).toMillis(), expected.toMillis());
    }

    @Test
    void completeWithZeroRetentionForgetsTheKeyAtOnce() {
        // On a store of its own: the contract's invariant checks count only a release as ending a claim.
        try (DedupStore store = createInspectableStore(new ManualTicker())) {
            StoreKey key = key("order-1");
            ClaimRequest request = new ClaimRequest(key, null, LEASE, CLAIM_RETENTION);
            Acquired owner = (Acquired) store.claim(List.of(request)).get(0);

            assertThat(store.complete(key, owner.token(), Duration.ZERO)).isTrue();

            assertThat(keyspace.redis().exists(new RedisKeys(prefix).encode(key))).isZero();
            assertThat(store.claim(List.of(request)).get(0)).isInstanceOfSatisfying(Acquired.class,
                    again -> assertThat(again.attempt()).isEqualTo(1));
        }
    }

    @Test
    void durationsBeyondAHundredYearsAreCappedNotOverflowed() {
        StoreKey key = key("forever");
        Duration forever = Duration.ofSeconds(Long.MAX_VALUE);

        ClaimResult claimed = store().claim(List.of(new ClaimRequest(key, null, forever, forever))).get(0);
        assertThat(claimed).isInstanceOf(Acquired.class);
        assertThat(store().complete(key, ((Acquired) claimed).token(), forever)).isTrue();

        assertThat(store().claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))))
                .containsExactly(new Duplicate(true));
    }

    @Test
    void idsWithLoneSurrogatesAreKeptApart() {
        StoreKey high = key("a\uD800");
        StoreKey otherHigh = key("a\uD801");
        Acquired owner = claim(high, null);
        store().complete(high, owner.token(), RETENTION);

        assertThat(store().claim(List.of(new ClaimRequest(otherHigh, null, LEASE, CLAIM_RETENTION))).get(0))
                .isInstanceOf(Acquired.class);
    }

    // ---------------------------------------------------------------- scripts and failures

    @Test
    void scriptsFlushedFromTheServerAreSentAgainInFull() {
        StoreKey key = key("order-1");
        keyspace.redis().scriptFlush();

        Acquired owner = claim(key, null);
        keyspace.redis().scriptFlush();

        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        Acquired next = claim(key("order-2"), null);
        keyspace.redis().scriptFlush();
        assertThat(store().completeAll(List.of(new CompletionRequest(key("order-2"), next.token(), RETENTION))))
                .containsExactly(CompletionResult.COMPLETED);
    }

    @Test
    void claimSentAgainWithItsOwnTokenIsAcquiredAgainNotInProgress() {
        // Lettuce sends a command again after a reconnect if its reply was lost; the claim must not then
        // find itself in the way.
        RedisKeys redisKeys = new RedisKeys(prefix);
        byte[] name = redisKeys.encode(key("order-1"));
        byte[] id = ascii("order-1");
        byte[][] scriptKeys = {name, redisKeys.familyOf(name, id)};
        byte[][] args = {ascii("42"), ascii("30000000"), ascii("300000"), new byte[0], ascii("330000"), new byte[0], id};
        byte[] script = LuaScript.named("claim").text();

        List<Long> first = keyspace.redis().eval(script, ScriptOutputType.MULTI, scriptKeys, args);
        List<Long> again = keyspace.redis().eval(script, ScriptOutputType.MULTI, scriptKeys, args);

        assertThat(first).containsExactly(1L, 1L);
        assertThat(again).containsExactly(1L, 1L);
    }

    @Test
    void valueWrittenUnderThePrefixByAnotherApplicationIsANonRetriableError() {
        StoreKey key = key("order-1");
        keyspace.redis().set(new RedisKeys(prefix).encode(key), ascii("not ours"));

        assertThatThrownBy(() -> store().claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("refused a claim of 1 key")
                .hasMessageContaining("is not an Idem record")
                .hasMessageContaining("give Idem a prefix of its own");
    }

    @Test
    void valueWrittenUnderThePrefixByAnotherApplicationFailsOnlyItsOwnCompletionInABatch() {
        StoreKey before = key("before");
        StoreKey foreign = key("foreign");
        StoreKey after = key("after");
        Acquired first = claim(before, null);
        Acquired second = claim(foreign, null);
        Acquired third = claim(after, null);
        keyspace.redis().set(new RedisKeys(prefix).encode(foreign), ascii("not ours"));

        List<CompletionResult> results = store().completeAll(List.of(
                new CompletionRequest(before, first.token(), RETENTION),
                new CompletionRequest(foreign, second.token(), RETENTION),
                new CompletionRequest(after, third.token(), RETENTION)));

        assertThat(results.get(0)).isEqualTo(CompletionResult.COMPLETED);
        assertThat(results.get(2)).isEqualTo(CompletionResult.COMPLETED);
        assertThat(results.get(1)).isInstanceOfSatisfying(CompletionResult.Failed.class, failed ->
                assertThat(failed.cause())
                        .satisfies(e -> assertThat(e.retriable()).isFalse())
                        .hasMessageContaining("refused a batched completion of key 'foreign'")
                        .hasMessageContaining("is not an Idem record")
                        .hasMessageContaining("give Idem a prefix of its own"));
        assertThat(get(prefix + namespace().length() + ":" + namespace() + ":foreign")).isEqualTo("not ours");
    }

    // ---------------------------------------------------------------- operator view

    @Test
    void statsPageThroughTheKeyspaceAndStopAtTheirBounds() {
        for (int i = 0; i < 30; i++) {
            claim(key("order-" + i), null);
        }
        RedisDedupStore store = (RedisDedupStore) inspectable();

        // SCAN walks the whole shared database, whatever else it holds: small pages, but not one key per call.
        assertThat(store.stats(100, Long.MAX_VALUE, Duration.ofMinutes(5))).as("page by page, to the end")
                .isEqualTo(new StoreStats(30, 0, false));
        assertThat(store.stats(1, Long.MAX_VALUE, Duration.ZERO)).as("out of time after the first call")
                .satisfies(stats -> assertThat(stats.truncated()).isTrue())
                .satisfies(stats -> assertThat(stats.claimed()).isLessThan(30));
        assertThat(store.stats(1, 1, Duration.ofMinutes(1))).as("out of keys after the first that matched")
                .satisfies(stats -> assertThat(stats.truncated()).isTrue())
                .satisfies(stats -> assertThat(stats.claimed()).isLessThan(30));
    }

    @Test
    void valueWrittenUnderThePrefixByAnotherApplicationFailsInspectionAndStats() {
        StoreKey key = key("order-1");
        keyspace.redis().set(new RedisKeys(prefix).encode(key), ascii("not ours"));

        assertThatThrownBy(() -> inspectable().inspect(key))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("refused an inspection of key 'order-1'")
                .hasMessageContaining("give Idem a prefix of its own");
        assertThatThrownBy(() -> inspectable().stats())
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("is not an Idem record")
                .hasMessageContaining("give Idem a prefix of its own");
    }

    @Test
    void valueWrittenUnderThePrefixByAnotherApplicationFailsAListingAndIsNeverPurged() {
        StoreKey foreign = key("foreign");
        byte[] foreignKey = new RedisKeys(prefix).encode(foreign);
        keyspace.redis().set(foreignKey, ascii("not ours"));
        keyspace.redis().hset(new RedisKeys(prefix).encode(key("foreign-hash")), ascii("f"), ascii("v"));
        StoreKey ours = key("order-1");
        Acquired owner = claim(ours, null);
        assertThat(store().complete(ours, owner.token(), RETENTION)).isTrue();

        assertThatThrownBy(() -> inspectable().list(namespace(), KeyFilter.ALL, null, 10))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("is not an Idem record")
                .hasMessageContaining("give Idem a prefix of its own");
        assertThat(inspectable().purge(namespace(), Instant.now().plus(RETENTION.multipliedBy(2)), null, 10))
                .isEqualTo(new PurgeBatch(1, null));
        assertThat(get(prefix + namespace().length() + ":" + namespace() + ":foreign")).isEqualTo("not ours");
        assertThat(keyspace.redis().hget(new RedisKeys(prefix).encode(key("foreign-hash")), ascii("f")))
                .isEqualTo(ascii("v"));
        assertThat(inspectable().inspect(ours)).isEmpty();
    }

    @Test
    void listingLeavesOutWatermarksAndKeysOfOtherPrefixes() {
        StoreKey key = key("order-1");
        Acquired owner = claim(key, null);
        assertThat(((RedisDedupStore) inspectable()).completeAndAdvance(key, owner.token(), RETENTION,
                new SequenceAdvance(key("account-7"), 1, RETENTION))).isTrue();
        try (InspectableDedupStore other = (InspectableDedupStore) PROVIDER.create(config(url, prefix + "x:"),
                new StoreContext(new ManualTicker()))) {
            ClaimResult elsewhere = other.claim(List.of(new ClaimRequest(key("order-2"), null, LEASE,
                    CLAIM_RETENTION))).get(0);
            assertThat(elsewhere).isInstanceOf(Acquired.class);

            assertThat(ids(inspectable())).containsExactly("order-1");
            assertThat(ids(other)).containsExactly("order-2");
        }
    }

    @Test
    void aCursorThisStoreDidNotMakeIsRefused() {
        for (String cursor : List.of("", "x", "12,%%%", "abc/", "/12", "12/34/56")) {
            assertThatThrownBy(() -> inspectable().list(namespace(), KeyFilter.ALL, cursor, 10)).as(cursor)
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> inspectable().purge(namespace(), Instant.now().plus(RETENTION), "0,YQ", 10))
                .as("a listing's cursor carrying IDs").isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void healthCheckPassesAndToStringNamesTheServerAndPrefix() {
        store().checkHealth();

        try (DedupStore other = createInspectableStore(new ManualTicker())) {
            assertThat(other.toString()).isEqualTo("RedisDedupStore[" + url + ", key-prefix=" + prefix + "]");
        }
    }

    // ---------------------------------------------------------------- helpers

    private Acquired claim(StoreKey key, String fingerprint) {
        ClaimResult result = store().claim(List.of(new ClaimRequest(key, fingerprint, LEASE, CLAIM_RETENTION))).get(0);
        assertThat(result).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }

    /** The IDs of every page of a listing of this test's namespace. */
    private List<String> ids(InspectableDedupStore store) {
        List<String> ids = new ArrayList<>();
        String cursor = null;
        do {
            KeyPage page = store.list(namespace(), KeyFilter.ALL, cursor, 10);
            page.keys().forEach(k -> ids.add(k.key().id()));
            cursor = page.cursor();
        } while (cursor != null);
        return ids;
    }

    private static String get(String key) {
        byte[] value = keyspace.redis().get(key.getBytes(StandardCharsets.UTF_8));
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String key) {
        return keyspace.redis().get(key.getBytes(StandardCharsets.UTF_8));
    }

    /** A completed record as the store writes it: {@code d}, the token in 8 bytes, attempts, the fingerprint. */
    static byte[] completed(long token, int attempts, String fingerprint) {
        return completed(token, attempts, fingerprint.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] completed(long token, int attempts, byte[] fingerprint) {
        byte[] count = ascii(Integer.toString(attempts));
        return ByteBuffer.allocate(9 + count.length + fingerprint.length).put((byte) 'd').putLong(token).put(count)
                .put(fingerprint).array();
    }

    private static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }
}
