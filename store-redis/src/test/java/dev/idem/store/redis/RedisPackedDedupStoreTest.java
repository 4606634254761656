package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import dev.idem.testkit.InspectableDedupStoreContract;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The whole contract against a real Redis with {@code pack-completed}, plus how packed completions are kept: in
 * buckets that split as a namespace's keys grow, read as absent once expired and swept, side by side with the
 * strings of a store that does not pack.
 */
class RedisPackedDedupStoreTest extends InspectableDedupStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final String CLASS_PREFIX = "idem-test-packed-" + UUID.randomUUID().toString().substring(0, 8) + "-";

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

    static TestPluginConfig packed(String url, String prefix) {
        return RedisDedupStoreTest.config(url, prefix).with("pack-completed", true);
    }

    @Override
    protected InspectableDedupStore createInspectableStore(ManualTicker ticker) {
        return (InspectableDedupStore) PROVIDER.create(packed(url, prefix), new StoreContext(ticker));
    }

    @Override
    protected void advanceStoreClock(Duration duration) {
        keyspace.advance(RedisKeyspace.glob(prefix, namespace()), duration);
    }

    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    // ---------------------------------------------------------------- how packed completions are kept

    @Test
    void aCompletedKeyIsAFieldOfABucketOfItsFamilyAndNoStringOfItsOwn() {
        StoreKey key = key("order-1");
        Acquired owner = (Acquired) claim(key, sha256("order-1"));
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        RedisKeys keys = new RedisKeys(prefix);
        byte[] message = keys.encode(key);
        byte[] family = keys.namespaceFamilyOf(message, utf8("order-1"));
        assertThat(keyspace.redis().exists(message)).isZero();
        assertThat(text(keyspace.redis().get(family))).matches("0 0 [08]");
        assertThat(keyspace.redis().pttl(family)).as("the family key has no TTL").isEqualTo(-1);
        byte[] value = keyspace.redis().hget(bucket(family, 0), utf8("order-1"));
        // The token, the expiry in 6 bytes, the ID's hash in 4, one attempt, '#' and the fingerprint's 32 bytes.
        assertThat(value).hasSize(8 + 6 + 4 + 1 + 1 + 32);
        assertThat(java.util.Arrays.copyOfRange(value, 14, 18))
                .isEqualTo(java.util.Arrays.copyOf(RedisKeys.hashedField(utf8("order-1")), 4));
        assertThat(keyspace.redis().pttl(bucket(family, 0))).isBetween(RETENTION.toMillis() - 60_000,
                RETENTION.toMillis());
        assertThat(claim(key, sha256("order-1"))).isEqualTo(new Duplicate(true));
        assertThat(claim(key, sha256("another payload"))).isEqualTo(new Duplicate(false));
        assertThat(store().complete(key, owner.token(), RETENTION)).as("a retried completion").isTrue();
        assertThat(store().complete(key, owner.token() + 1, RETENTION)).as("another owner's").isFalse();
    }

    @Test
    void bucketsSplitAsTheKeysOfASlotGrowAndEveryKeyStaysADuplicate() {
        // A prefix holding a whole hash tag puts every key on one slot: one family of buckets for the namespace.
        String oneSlot = CLASS_PREFIX + "{" + UUID.randomUUID().toString().substring(0, 8) + "}:";
        try (InspectableDedupStore store = (InspectableDedupStore) PROVIDER.create(packed(url, oneSlot),
                new StoreContext(ticker()))) {
            List<StoreKey> completed = completeMany(store, "split", 3_000);

            RedisKeys keys = new RedisKeys(oneSlot);
            byte[] message = keys.encode(completed.get(0));
            byte[] family = keys.namespaceFamilyOf(message, utf8(completed.get(0).id()));
            String[] state = text(keyspace.redis().get(family)).split(" ");
            int buckets = (1 << Integer.parseInt(state[0])) + Integer.parseInt(state[1]);
            // The count is an estimate: 8 for each of about one insert in 8; its standard deviation here is about 150.
            assertThat(Long.parseLong(state[2])).as("estimated fields").isBetween(2_400L, 3_600L);
            assertThat(buckets).as("buckets for about 40 fields each").isBetween(2_400 / 40, 3_600 / 40 + 1);
            long fields = 0;
            for (int n = 0; n < buckets; n++) {
                long held = keyspace.redis().hlen(bucket(family, n));
                assertThat(held).as("bucket " + n + " stays a listpack").isLessThanOrEqualTo(128);
                fields += held;
            }
            assertThat(fields).isEqualTo(3_000);
            assertThat(keyspace.redis().exists(keys.encode(completed.get(1)))).isZero();

            List<ClaimResult> again = store.claim(requests(completed));
            assertThat(again).allSatisfy(r -> assertThat(r).isEqualTo(new Duplicate(true)));
            assertThat(listAll(store, "split", KeyFilter.ALL)).hasSize(3_000);
            assertThat(store.stats().completed()).isEqualTo(3_000);
        }
    }

    @Test
    void expiredFieldsReadAsAbsentAndAreSweptByAnInsertWhoseHashTakesTheTurn() {
        // Ten keys kept a minute and one an hour, none taking a sweep's turn: the bucket outlives the ten.
        List<StoreKey> early = completeEach(idsTakingTheTurn(false, 10), Duration.ofMinutes(1));
        completeEach(idsTakingTheTurn(false, 1), RETENTION);
        advance(Duration.ofMinutes(2));

        for (StoreKey key : early) {
            assertThat(inspectable().inspect(key)).isEmpty();
        }
        RedisKeys keys = new RedisKeys(prefix);
        byte[] family = keys.namespaceFamilyOf(keys.encode(early.get(0)), utf8(early.get(0).id()));
        assertThat(keyspace.redis().hlen(bucket(family, 0))).as("expired, not swept yet").isEqualTo(11);
        completeEach(idsTakingTheTurn(false, 3), RETENTION);
        assertThat(keyspace.redis().hlen(bucket(family, 0))).isEqualTo(14);

        completeEach(idsTakingTheTurn(true, 1), RETENTION);

        assertThat(keyspace.redis().hlen(bucket(family, 0))).as("the ten are swept").isEqualTo(5);
        // The estimate: 0, plus 8 for the insert taking the turn, less the 10 swept, and never below 0.
        assertThat(text(keyspace.redis().get(family))).isEqualTo("0 0 0");
        assertThat(claim(early.get(0), null)).isInstanceOfSatisfying(Acquired.class,
                acquired -> assertThat(acquired.attempt()).isEqualTo(1));
    }

    @Test
    void aValueTooLongForAFieldStaysAStringAndIsStillADuplicate() {
        StoreKey key = key("order-text");
        String fingerprint = "a fingerprint of text, longer than what a listpack field holds";
        Acquired owner = (Acquired) claim(key, fingerprint);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(keyspace.redis().get(new RedisKeys(prefix).encode(key))).startsWith('d');
        assertThat(claim(key, fingerprint)).isEqualTo(new Duplicate(true));
        assertThat(claim(key, "another")).isEqualTo(new Duplicate(false));
    }

    @Test
    void anIdTooLongForAFieldStaysAStringAndIsStillADuplicate() {
        StoreKey key = key("x".repeat(65));
        Acquired owner = (Acquired) claim(key, sha256("long"));
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(keyspace.redis().get(new RedisKeys(prefix).encode(key))).startsWith('d');
        assertThat(claim(key, sha256("long"))).isEqualTo(new Duplicate(true));
    }

    @Test
    void aStoreThatPacksAndOneThatDoesNotReadEachOthersCompletions() {
        try (InspectableDedupStore strings = (InspectableDedupStore) PROVIDER.create(
                RedisDedupStoreTest.config(url, prefix), new StoreContext(ticker()))) {
            List<StoreKey> asStrings = completeMany(strings, namespace(), 5);
            List<StoreKey> packed = completeMany(store(), namespace(), 5);
            RedisKeys keys = new RedisKeys(prefix);
            assertThat(keyspace.redis().exists(keys.encode(asStrings.get(0)))).isOne();
            assertThat(keyspace.redis().exists(keys.encode(packed.get(0)))).isZero();

            List<StoreKey> all = new ArrayList<>(asStrings);
            all.addAll(packed);
            assertThat(strings.claim(requests(all))).allSatisfy(r -> assertThat(r).isEqualTo(new Duplicate(true)));
            assertThat(store().claim(requests(all))).allSatisfy(r -> assertThat(r).isEqualTo(new Duplicate(true)));
            for (InspectableDedupStore reader : List.of(strings, inspectable())) {
                List<ListedKey> listed = listAll(reader, namespace(), KeyFilter.ALL);
                assertThat(listed).extracting(ListedKey::key).containsExactlyInAnyOrderElementsOf(all);
                assertThat(listed).allSatisfy(k -> assertThat(k.stored().state()).isEqualTo(StoredKey.State.COMPLETED));
                assertThat(reader.stats().completed()).isEqualTo(10);
            }
            assertThat(strings.inspect(packed.get(0))).hasValueSatisfying(k ->
                    assertThat(k.expiresAt()).isBetween(Instant.now().plus(RETENTION).minusSeconds(60),
                            Instant.now().plus(RETENTION).plusSeconds(1)));

            assertThat(strings.delete(packed.get(1))).isTrue();
            assertThat(inspectable().inspect(packed.get(1))).isEmpty();
            long purged = 0;
            String cursor = null;
            do {
                PurgeBatch batch = strings.purge(namespace(), Instant.now().plus(RETENTION).plusSeconds(5), cursor, 100);
                purged += batch.deleted();
                cursor = batch.cursor();
            } while (cursor != null);
            assertThat(purged).isEqualTo(9);
            assertThat(listAll(inspectable(), namespace(), KeyFilter.ALL)).isEmpty();
        }
    }

    // ---------------------------------------------------------------- helpers

    private ClaimResult claim(StoreKey key, String fingerprint) {
        return store().claim(List.of(new ClaimRequest(key, fingerprint, LEASE, CLAIM_RETENTION))).get(0);
    }

    private static List<ClaimRequest> requests(List<StoreKey> keys) {
        List<ClaimRequest> out = new ArrayList<>(keys.size());
        for (StoreKey key : keys) {
            out.add(new ClaimRequest(key, sha256(key.id()), LEASE, CLAIM_RETENTION));
        }
        return out;
    }

    /** Claims and completes {@code count} fresh UUID keys of {@code namespace}, in batches of 500. */
    private static List<StoreKey> completeMany(dev.idem.spi.DedupStore store, String namespace, int count) {
        return completeMany(store, namespace, count, RETENTION);
    }

    private static List<StoreKey> completeMany(dev.idem.spi.DedupStore store, String namespace, int count,
            Duration retention) {
        List<StoreKey> keys = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            keys.add(new StoreKey(namespace, UUID.randomUUID().toString()));
        }
        for (int from = 0; from < count; from += 500) {
            List<StoreKey> batch = keys.subList(from, Math.min(count, from + 500));
            List<ClaimResult> claimed = store.claim(requests(batch));
            List<CompletionRequest> completions = new ArrayList<>(batch.size());
            for (int i = 0; i < batch.size(); i++) {
                completions.add(new CompletionRequest(batch.get(i), ((Acquired) claimed.get(i)).token(), retention));
            }
            assertThat(store.completeAll(completions)).allSatisfy(r -> assertThat(r).isEqualTo(CompletionResult.COMPLETED));
        }
        return keys;
    }

    /** {@code count} fresh IDs whose hash does, or does not, take a sweep's turn (record.lua's pack_completed). */
    private static List<String> idsTakingTheTurn(boolean turn, int count) {
        List<String> ids = new ArrayList<>();
        while (ids.size() < count) {
            String id = UUID.randomUUID().toString();
            byte[] hashed = RedisKeys.hashedField(utf8(id));
            long h = java.nio.ByteBuffer.wrap(hashed, 0, 4).getInt() & 0xFFFF_FFFFL;
            if ((h >>> 20) % 8 == 0 == turn) {
                ids.add(id);
            }
        }
        return ids;
    }

    /** Claims and completes each of {@code ids}, one at a time, kept for {@code retention}. */
    private List<StoreKey> completeEach(List<String> ids, Duration retention) {
        List<StoreKey> keys = new ArrayList<>();
        for (String id : ids) {
            StoreKey key = key(id);
            Acquired owner = (Acquired) claim(key, sha256(id));
            assertThat(store().complete(key, owner.token(), retention)).isTrue();
            keys.add(key);
        }
        return keys;
    }

    private static List<ListedKey> listAll(InspectableDedupStore store, String namespace, KeyFilter filter) {
        List<ListedKey> out = new ArrayList<>();
        Set<StoreKey> seen = new HashSet<>();
        String cursor = null;
        do {
            KeyPage page = store.list(namespace, filter, cursor, 70);
            for (ListedKey k : page.keys()) {
                assertThat(seen.add(k.key())).as("listed once: " + k.key()).isTrue();
                out.add(k);
            }
            cursor = page.cursor();
        } while (cursor != null);
        return out;
    }

    private static byte[] bucket(byte[] family, int n) {
        byte[] number = Integer.toString(n).getBytes(StandardCharsets.US_ASCII);
        byte[] out = java.util.Arrays.copyOf(family, family.length + number.length);
        System.arraycopy(number, 0, out, family.length, number.length);
        return out;
    }

    static String sha256(String text) {
        try {
            return Base64.getUrlEncoder().withoutPadding().encodeToString(
                    MessageDigest.getInstance("SHA-256").digest(utf8(text)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
