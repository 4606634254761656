package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.ListedKey;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.StoredKey.State;
import dev.idem.spi.StoredReply;
import dev.idem.testkit.ManualTicker;
import io.lettuce.core.ScriptOutputType;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A store written by the earlier record format ({@code D|token|attempts|0|0|=fingerprint} for a completed key, the
 * reply's value opening with the decimal token) is read by this one: its records are written here by the earlier
 * release's own scripts, copied verbatim into {@code src/test/resources/dev/idem/store/redis/earlier/} from commit
 * 3f0ed27, and then used by the store as it is now, beside records of its own.
 */
class RedisEarlierRecordsTest {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final String CLASS_PREFIX = "idem-test-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration CLAIM_RETENTION = Duration.ofMinutes(5);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final String NAMESPACE = "orders";

    private static String url;
    private static RedisKeyspace keyspace;

    private final String prefix = CLASS_PREFIX + UUID.randomUUID().toString().substring(0, 8) + ":";
    private final RedisKeys keys = new RedisKeys(prefix);
    private RedisDedupStore store;

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

    @BeforeEach
    void createStore() {
        store = (RedisDedupStore) PROVIDER.create(RedisDedupStoreTest.config(url, prefix),
                new StoreContext(new ManualTicker()));
    }

    @AfterEach
    void closeStore() {
        store.close();
    }

    @Test
    void earlierCompletedKeyIsADuplicateMatchedByEitherFingerprintFormAndInspectedAsWritten() {
        String fingerprint = sha256("payload-1");
        StoreKey key = key("order-1");
        earlierClaim(key, 71, fingerprint);
        assertThat(earlierComplete(key, 71)).isEqualTo(1L);
        assertThat(text(keyspace.redis().get(keys.encode(key)))).isEqualTo("D|71|1|0|0|=" + fingerprint);

        assertThat(claim(key, fingerprint)).isEqualTo(new Duplicate(true));
        assertThat(claim(key, sha256("payload-2"))).isEqualTo(new Duplicate(false));
        assertThat(claim(key, null)).isEqualTo(new Duplicate(true));
        StoredKey inspected = store.inspect(key).orElseThrow();
        assertThat(inspected.state()).isEqualTo(State.COMPLETED);
        assertThat(inspected.attempts()).isEqualTo(1);
        assertThat(inspected.fingerprint()).isEqualTo(fingerprint);
        assertThat(inspected.expiresAt()).isBetween(Instant.now().plus(RETENTION).minusSeconds(10),
                Instant.now().plus(RETENTION));

        assertThat(store.complete(key, 71, RETENTION)).as("its owner's completion, retried").isTrue();
        assertThat(store.complete(key, 72, RETENTION)).as("a stale owner's").isFalse();
        assertThat(text(keyspace.redis().get(keys.encode(key)))).as("left as it was")
                .isEqualTo("D|71|1|0|0|=" + fingerprint);
    }

    @Test
    void earlierClaimInProgressCompletesIntoTheCompactRecord() {
        String fingerprint = sha256("payload-1");
        StoreKey key = key("order-2");
        earlierClaim(key, 81, fingerprint);

        assertThat(claim(key, fingerprint)).isInstanceOf(InProgress.class);
        assertThat(store.renew(key, 81, LEASE)).isTrue();
        assertThat(store.recordStart(key, 81)).isEqualTo(1);
        assertThat(store.completeAll(List.of(new CompletionRequest(key, 81, RETENTION))))
                .containsExactly(CompletionResult.COMPLETED);

        assertThat(keyspace.redis().get(keys.encode(key))).as("the earlier fingerprint's text, carried over")
                .isEqualTo(RedisDedupStoreTest.completed(81, 1, "=" + fingerprint));
        assertThat(claim(key, fingerprint)).isEqualTo(new Duplicate(true));
        assertThat(claim(key, sha256("payload-2"))).isEqualTo(new Duplicate(false));
        assertThat(store.complete(key, 81, RETENTION)).isTrue();
        assertThat(store.complete(key, 82, RETENTION)).isFalse();
    }

    @Test
    void earlierClaimWithStartsWhoseLeaseRanOutIsTakenOverWithItsAttemptsAndStarts() {
        StoreKey key = key("order-3");
        earlierClaim(key, 91, sha256("payload-1"));
        Object starts = keyspace.redis().eval(earlier("start"), ScriptOutputType.INTEGER,
                new byte[][] {keys.encode(key)}, ascii("91"));
        assertThat(starts).isEqualTo(1L);
        keyspace.advance(RedisKeyspace.glob(prefix), LEASE.plusSeconds(1));

        Acquired taken = (Acquired) claim(key, sha256("payload-1"));

        assertThat(taken.attempt()).isEqualTo(2);
        assertThat(store.recordStart(key, taken.token())).isEqualTo(2);
        assertThat(store.complete(key, 91, RETENTION)).as("the earlier owner, fenced out").isFalse();
        assertThat(store.complete(key, taken.token(), RETENTION)).isTrue();
        assertThat(store.inspect(key).orElseThrow().attempts()).isEqualTo(2);
    }

    @Test
    void earlierReplyIsAnsweredWhileItsEarlierCompletionStands() {
        StoreKey key = key("order-4");
        earlierClaim(key, 101, sha256("payload-1"));
        StoredReply sent = new StoredReply(ascii("{\"ok\":true}"), Map.of("correlation-id", "c-4"));
        // complete_advance.lua of the earlier release: ARGV[1] completions, then seven per completion.
        byte[] message = keys.encode(key);
        Object done = keyspace.redis().eval(earlier("complete_advance", "watermark"), ScriptOutputType.MULTI,
                new byte[][] {message, keys.replyOf(message)}, ascii("1"), ascii("101"), ascii(RETENTION.toMillis()),
                ascii("0"), new byte[0], new byte[0], ascii("1"), RedisReplies.encode(sent));
        assertThat(done).isEqualTo(List.of(1L));
        assertThat(text(keyspace.redis().get(keys.replyOf(message)))).startsWith("101|");

        assertThat(store.reply(key)).contains(sent);
        assertThat(store.delete(key)).isTrue();
        assertThat(keyspace.redis().exists(keys.replyOf(message))).as("the reply goes with its key").isZero();
        assertThat(store.reply(key)).isEmpty();
    }

    @Test
    void listingStatsPurgeAndDeleteHandleBothFormsSideBySide() {
        String fingerprint = sha256("payload-1");
        StoreKey earlierDone = key("a-earlier-done");
        StoreKey earlierClaimed = key("b-earlier-claimed");
        StoreKey laterDone = key("c-later-done");
        StoreKey laterClaimed = key("d-later-claimed");
        earlierClaim(earlierDone, 111, fingerprint);
        assertThat(earlierComplete(earlierDone, 111)).isEqualTo(1L);
        earlierClaim(earlierClaimed, 112, "sha256:not-base64");
        Acquired later = (Acquired) claim(laterDone, fingerprint);
        assertThat(store.complete(laterDone, later.token(), RETENTION)).isTrue();
        assertThat(claim(laterClaimed, null)).isInstanceOf(Acquired.class);

        List<ListedKey> listed = store.list(NAMESPACE, KeyFilter.ALL, null, 100).keys();
        assertThat(listed.stream().collect(Collectors.toMap(k -> k.key().id(), k -> k.stored().state())))
                .isEqualTo(Map.of(earlierDone.id(), State.COMPLETED, earlierClaimed.id(), State.CLAIMED,
                        laterDone.id(), State.COMPLETED, laterClaimed.id(), State.CLAIMED));
        assertThat(listed.stream().filter(k -> k.stored().fingerprint() != null)
                .collect(Collectors.toMap(k -> k.key().id(), k -> k.stored().fingerprint())))
                .isEqualTo(Map.of(earlierDone.id(), fingerprint, earlierClaimed.id(), "sha256:not-base64",
                        laterDone.id(), fingerprint));
        assertThat(store.stats()).isEqualTo(new StoreStats(2, 2, false));

        assertThat(store.purge(NAMESPACE, Instant.now().plus(RETENTION).plusSeconds(60), null, 100).deleted())
                .isEqualTo(2);
        assertThat(store.inspect(earlierDone)).isEmpty();
        assertThat(store.inspect(laterDone)).isEmpty();
        assertThat(store.stats()).isEqualTo(new StoreStats(2, 0, false));
        assertThat(store.delete(earlierClaimed)).isTrue();
        assertThat(store.stats()).isEqualTo(new StoreStats(1, 0, false));
    }

    private Object claim(StoreKey key, String fingerprint) {
        return store.claim(List.of(new ClaimRequest(key, fingerprint, LEASE, CLAIM_RETENTION))).get(0);
    }

    /** A claim of {@code key} by the earlier release's {@code claim.lua}, with the arguments its store sent. */
    private void earlierClaim(StoreKey key, long token, String fingerprint) {
        long leaseMicros = LEASE.toNanos() / 1000;
        long keep = CLAIM_RETENTION.toMillis();
        Object reply = keyspace.redis().eval(earlier("claim"), ScriptOutputType.MULTI,
                new byte[][] {keys.encode(key)}, ascii(Long.toString(token)), ascii(leaseMicros), ascii(keep),
                fingerprint == null ? new byte[0] : RedisKeys.utf8("=" + fingerprint),
                ascii(leaseMicros / 1000 + keep));
        assertThat(reply).isEqualTo(List.of(1L, 1L));
    }

    /** A completion by the earlier release's {@code complete_all.lua}: 1 done, 0 not the owner's. */
    private Object earlierComplete(StoreKey key, long token) {
        List<?> reply = keyspace.redis().eval(earlier("complete_all"), ScriptOutputType.MULTI,
                new byte[][] {keys.encode(key)}, ascii(Long.toString(token)), ascii(RETENTION.toMillis()));
        return reply.get(0);
    }

    private static StoreKey key(String id) {
        return new StoreKey(NAMESPACE, id);
    }

    /** The earlier release's script, put together as its {@code LuaScript.named} did. */
    private static byte[] earlier(String name, String... helpers) {
        StringBuilder text = new StringBuilder(resource("record")).append('\n');
        for (String helper : helpers) {
            text.append(resource(helper)).append('\n');
        }
        return text.append(resource(name)).toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String resource(String name) {
        try (InputStream in = RedisEarlierRecordsTest.class.getResourceAsStream("earlier/" + name + ".lua")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A fingerprint as the runtime computes it: SHA-256, unpadded base64url. */
    static String sha256(String payload) {
        try {
            return Base64.getUrlEncoder().withoutPadding().encodeToString(
                    MessageDigest.getInstance("SHA-256").digest(payload.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] ascii(long number) {
        return ascii(Long.toString(number));
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
