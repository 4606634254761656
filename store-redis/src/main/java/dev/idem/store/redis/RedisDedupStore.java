package dev.idem.store.redis;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.FencingTokens;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.StoredReply;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A {@link DedupStore} in Redis. See {@link RedisDedupStoreProvider} for configuration, the key layout and
 * the Cluster strategy.
 *
 * <p>Each key holds one string value, a small record, and a TTL:
 * <pre>
 * C|token|attempts|leaseUntil|claimRetention|fingerprint           claimed; TTL = lease + claim retention
 * C|token|attempts|leaseUntil|claimRetention|starts|fingerprint    claimed, with starts recorded
 * d&lt;token, 8 bytes&gt;attempts fingerprint                      completed; TTL = retention
 * D|token|attempts|0|0|fingerprint                                 completed, as earlier versions wrote it (read only)
 * </pre>
 * {@code leaseUntil} is in microseconds of the server's clock ({@code TIME}), {@code claimRetention} in
 * milliseconds (kept so that a renewal can set the TTL again), the fingerprint empty for none, {@code #} and 32 raw
 * bytes for a SHA-256 in unpadded base64url (what the runtime computes), {@code =} and the text otherwise
 * ({@link RedisRecords}). A string with {@code SET ... PX} takes one command per write where a hash would take two
 * ({@code HSET} and {@code PEXPIRE}).
 *
 * <p>A completed record is what a store holds by the million, so it keeps only what its readers need: the token (a
 * retried completion by its owner answers done, a stale owner's not; the reply names it), attempts and the
 * fingerprint (claims, {@code inspect}, {@code list}), with the token in binary and a SHA-256 fingerprint raw, in 43
 * bytes: under the 44 that Redis embeds in the value's object ({@code embstr}), one allocation of 64 bytes where the
 * textual record ({@code D|...}, 72 bytes) took an object and a string of 96. {@code StoreScaleBenchmark} measured
 * 240 bytes of {@code used_memory} per completed key before and 206 after (200,000 keys, UUID IDs, medians of 3
 * rounds; README, "Store cost at scale"). Records of both forms
 * live side by side: a store written by an earlier version is read as it is, its claims complete into the new form,
 * and its completed keys stay duplicates until their TTL. Processes of an earlier version do not read the new form:
 * upgrade every process sharing a store together.
 *
 * <p><b>Packed completions</b> ({@code pack-completed}, off by default): a completion deletes the claim's string and
 * writes the key as a field of a small hash, a bucket of its namespace's family (one family per namespace on a
 * standalone server, per namespace and hash slot in Cluster mode, on that slot; {@link RedisKeys#familyOf}), the field
 * its ID and the value {@code <token, 8 bytes><expiry, server ms, 6 bytes><ID's hash, 4 bytes>attempts fingerprint}.
 * Redis keeps such a hash as one listpack, where a field costs its bytes and a few more, so a completed key takes
 * about 100 bytes of {@code used_memory} instead of about 230 (README, "Store cost at scale"). The store keeps the
 * expiry (Redis 7.0 has none per field), grows a family's buckets by linear hashing and sweeps expired fields as it
 * writes; {@code record.lua} says how. Every script reading a completed key reads both forms whatever this store
 * writes, so turning it off leaves packed keys readable; processes of releases before it do not read them. The
 * price is Redis's CPU: a completion runs about five commands in its script instead of two.
 *
 * <p>{@code starts} counts the handler starts {@link #recordStart} recorded; it appears only once there is
 * one, so the happy path's records keep the short form that stores from before recorded starts also read.
 * The fingerprint's {@code =} or {@code #} tells the two claimed forms apart. A takeover carries {@code starts} over
 * to the new owner's record; a release deletes it with the key, and a completed key does not keep it.
 *
 * <p>Every state change is one Lua script (see the {@code .lua} files beside this class), so it is atomic
 * per key, and every time comparison reads the server's clock: the processes sharing a store need not
 * agree on the time. A claim's retry-after is the rest of the owner's lease by that clock.
 *
 * <p>A batch of claims, and a batch of completions ({@code complete_all.lua}), is one script call per batch,
 * or in Cluster mode one per hash slot, all sent at once. Within a completion script each key is completed
 * on its own, as {@code complete.lua} would, and a key whose own write fails (a value another application
 * wrote under the prefix, a write refused for memory) answers its error while the other keys go on; a slot
 * whose call fails as a whole answers {@link CompletionResult.Failed} for its keys alone, and only a batch
 * of which no call was answered throws.
 *
 * <p>As an {@link InspectableDedupStore}: {@code inspect} and {@code delete} are one script each, atomic per
 * key. {@code expiresAt} is the time left by the server's clock (µs for a lease, whole ms for a completed
 * key's TTL) added to this host's clock when the reply arrives, so it is late by at most the round trip.
 * {@code stats} is not cheap: it {@code SCAN}s the whole database ({@code MATCH <prefix>*}, {@value
 * #STATS_PAGE} per call; in Cluster mode every master in turn), {@code GET}s each matching key (pipelined)
 * and classifies it by one reading of the server's clock ({@code TIME}; of one node in Cluster mode, so
 * a lease ending within the nodes' clock skew may be counted either way). Keys change while it runs, so
 * the counts are a close estimate, not a snapshot. It stops after {@value #STATS_MAX_KEYS} matching keys
 * or {@link #STATS_BUDGET}, and then says it was truncated. {@code list} and {@code purge} {@code SCAN} one
 * namespace's keys and read them with a script; see {@link RedisListing}, also for how exact a listing is.
 *
 * <p>As a {@link SequencedDedupStore}: each aggregate's watermark is a key of its own under the prefix
 * ({@code <prefix>seq:<namespace length>:<namespace>:<aggregate>}), raised in the completion's own script; see
 * {@link RedisWatermarks}, also for Cluster mode, where the two are atomic only when they share a slot.
 * {@code stats} skips watermark keys.
 *
 * <p>As a {@link StepStore}: a message's durable steps are a hash of their own on the message key's slot
 * ({@link RedisKeys#steps}), read and written by one script each ({@code steps.lua}, {@code record_step.lua}) that
 * checks the claim's token in the same step, so a record and a takeover never interleave. The hash's TTL is the
 * claim's retention after the earlier of the record and the claim's lease end (the longest any of its steps asked
 * for): a completion leaves it to run out, which it does no later than the completed key's own TTL, a release
 * leaves it for the next claim, and {@code delete} and {@code purge} delete it with its key. {@code stats} skips it.
 *
 * <p>As a {@link ReplyStore}: the reply stored with a completion is a string of its own on the message key's slot
 * ({@link RedisKeys#reply}), holding the completion's token and the reply ({@link RedisReplies}), with the completion's
 * retention as its TTL. It exists only for a key completed with a reply; the completed record itself does not change.
 * The completion's script writes it ({@code complete_advance.lua}, which also raises watermarks): a batch holding a
 * reply or an advance runs that script instead of {@code complete_all.lua}, so a completion and its reply change
 * together, in Cluster mode too. {@code reply} is one script ({@code reply.lua}) that answers the reply only while the
 * key is completed with the token it names. {@code delete} and {@code purge} delete it with its key; {@code stats}
 * skips it. In Cluster mode a prefix opening with empty braces ({@code {}}) cannot put it on the key's slot, and
 * completions with replies are refused there, as steps are.
 *
 * <p>With {@code wait.replicas} set, every write the runtime relies on (claim, complete, completeAll,
 * completeAndAdvance, completeWithReply, release, renew, recordStart, recordStep) sends a {@code WAIT} right behind
 * its script and answers only once that many replicas acknowledged it; otherwise it fails retriably ({@link ReplicaWait}). The
 * operator's writes ({@code delete}, {@code purge}) do not wait: one lost in a failover leaves a key that still counts as processed,
 * which errs on the side of not running a handler. A claim that failed retriably after it was sent leaves its tokens
 * to the next claim of its keys ({@link UnclaimedTokens}).
 *
 * <p>Thread-safe: calls from any number of threads share one connection and are pipelined on it. Failures
 * are {@link dev.idem.spi.StoreException}s; see {@link Failures} for which are retriable.
 */
final class RedisDedupStore implements InspectableDedupStore, SequencedDedupStore, StepStore, ReplyStore {

    /** Longer leases and retentions are cut to this, so deadlines stay exact in Lua's doubles. */
    static final Duration LONGEST = Duration.ofDays(100 * 365);

    private static final LuaScript CLAIM = LuaScript.named("claim");
    private static final LuaScript COMPLETE = LuaScript.named("complete");
    private static final LuaScript COMPLETE_ALL = LuaScript.named("complete_all");
    private static final LuaScript RELEASE = LuaScript.named("release");
    private static final LuaScript RENEW = LuaScript.named("renew");
    private static final LuaScript INSPECT = LuaScript.named("inspect");
    private static final LuaScript DELETE = LuaScript.named("delete");
    private static final LuaScript START = LuaScript.named("start");
    private static final LuaScript STEPS = LuaScript.named("steps");
    private static final LuaScript RECORD_STEP = LuaScript.named("record_step");
    private static final LuaScript REPLY = LuaScript.named("reply");
    private static final List<LuaScript> SCRIPTS = List.of(CLAIM, COMPLETE, COMPLETE_ALL, RELEASE, RENEW, START,
            INSPECT, DELETE, RedisWatermarks.COMPLETE_ADVANCE, RedisWatermarks.RAISE, RedisListing.LIST,
            RedisListing.PURGE, STEPS, RECORD_STEP, REPLY);

    /** How many keys one {@code SCAN} call of {@link #stats()} asks for. */
    static final int STATS_PAGE = 1000;
    /** After how many matching keys {@link #stats()} stops. */
    static final long STATS_MAX_KEYS = 1_000_000;
    /** After how long {@link #stats()} stops. */
    static final Duration STATS_BUDGET = Duration.ofSeconds(10);

    private static final long ACQUIRED = 1;
    private static final long DUPLICATE = 2;
    private static final long IN_PROGRESS = 3;
    private static final Duplicate MATCHES = new Duplicate(true);
    private static final Duplicate DIFFERS = new Duplicate(false);
    private static final byte[] NO_FIELD = new byte[0];

    private final RedisConnection connection;
    private final RedisClusterAsyncCommands<byte[], byte[]> redis;
    private final RedisKeys keys;
    private final String keyPrefix;
    private final Failures failures;
    private final long waitNanos;
    private final ReplicaWait replicas;
    private final long writeWaitNanos;
    private final UnclaimedTokens unclaimed = new UnclaimedTokens();
    private final RedisWatermarks watermarks;
    private final RedisListing listing;
    /** Whether completions are written as packed fields where they fit ({@code pack-completed}). */
    private final byte[] pack;
    /** Whether a key's family of buckets can lie on its slot, so that scripts read (and write) packed completions. */
    private final boolean packable;

    /** Without waiting for replicas; for tests. */
    RedisDedupStore(RedisConnection connection, String keyPrefix, Failures failures, Duration commandTimeout) {
        this(connection, keyPrefix, failures, commandTimeout, new ReplicaWait(0, Duration.ZERO, connection), false);
    }

    /**
     * @param replicas what each claim, completion and other fenced write waits for ({@code wait.replicas})
     * @param packCompleted whether completions are written as packed fields ({@code pack-completed}); packed ones are
     *     read either way
     */
    RedisDedupStore(RedisConnection connection, String keyPrefix, Failures failures, Duration commandTimeout,
            ReplicaWait replicas, boolean packCompleted) {
        this.connection = connection;
        this.redis = connection.commands();
        this.keys = new RedisKeys(keyPrefix);
        this.keyPrefix = keyPrefix;
        this.packable = !connection.cluster() || keys.companionsOnSlot();
        if (packCompleted && !packable) {
            throw new IllegalArgumentException("pack-completed needs a key-prefix whose first braces are not empty");
        }
        this.pack = ascii(packCompleted ? 1 : 0);
        this.failures = failures;
        // Lettuce fails a command itself after the command timeout; a NOSCRIPT fallback sends a second one.
        this.waitNanos = commandTimeout.multipliedBy(2).toNanos();
        this.replicas = replicas;
        // A write's WAIT may be held that much longer by the server.
        this.writeWaitNanos = waitNanos + replicas.extraNanos();
        this.watermarks = new RedisWatermarks(this, connection, keys, failures, writeWaitNanos);
        this.listing = new RedisListing(this, connection, keys, failures, waitNanos);
    }

    /**
     * Loads the scripts into the server's cache, so the first calls need no {@code EVAL} fallback; this also
     * proves the server answers and runs scripts.
     */
    void loadScripts() {
        long deadline = System.nanoTime() + waitNanos;
        for (LuaScript script : SCRIPTS) {
            await(redis.scriptLoad(script.text()).toCompletableFuture(), "SCRIPT LOAD of " + script, deadline);
        }
    }

    /** Logs, and answers, a warning for each server that may evict this store's keys; see {@link EvictionCheck}. */
    List<String> warnIfKeysMayBeEvicted() {
        return EvictionCheck.warn(this, connection, failures, waitNanos);
    }

    /**
     * Logs, and answers, a warning for each server that would keep the buckets of {@code pack-completed} as hash
     * tables; none when the store does not pack. See {@link PackingCheck}.
     */
    List<String> warnIfBucketsWouldNotPack() {
        return pack[0] == '1' ? PackingCheck.warn(this, connection, failures, waitNanos) : List.of();
    }

    /** Logs, and answers, a warning when fewer replicas than {@code wait.replicas} are connected; see {@link ReplicaWait}. */
    List<String> warnIfTooFewReplicas() {
        return replicas.warnIfTooFewReplicas(this, failures, waitNanos);
    }

    /** What each write sends right behind it, or {@code null}: read before the write is sent (see {@link ReplicaWait}). */
    Supplier<CompletableFuture<Long>> replicated() {
        return replicas.behind();
    }

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        int size = requests.size();
        if (size == 0) {
            return List.of();
        }
        byte[][] redisKeys = new byte[size][];
        byte[][] ids = new byte[size][];
        long[] tokens = new long[size];
        long[] reusableUntil = new long[size];
        long sent = System.nanoTime();
        for (int i = 0; i < size; i++) {
            ClaimRequest request = requests.get(i);
            ids[i] = RedisKeys.utf8(request.key().id());
            redisKeys[i] = keys.encode(request.key());
            UnclaimedTokens.Entry again = unclaimed.take(request, sent);
            if (again != null) {
                tokens[i] = again.token();
                reusableUntil[i] = again.reusableUntil();
            } else {
                // Not INCR of a counter key in Redis (FencingTokens says why not a counter at all): in Cluster mode no
                // one key shares the hash slot of every batch's keys, and a token drawn here costs the server nothing.
                tokens[i] = FencingTokens.next();
                reusableUntil[i] = UnclaimedTokens.reusableUntil(request, sent);
            }
        }
        int[][] groups = connection.cluster() ? bySlot(redisKeys) : oneGroup(redisKeys);
        Supplier<CompletableFuture<Long>> behind = replicas.behind();
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>(groups.length);
        for (int[] group : groups) {
            replies.add(CLAIM.run(redis, behind, ScriptOutputType.MULTI, withFamilies(group, redisKeys, ids),
                    claimArgs(group, requests, tokens, ids)));
        }
        String operation = "a claim of " + size + (size == 1 ? " key" : " keys");
        long deadline = System.nanoTime() + writeWaitNanos;
        ClaimResult[] results = new ClaimResult[size];
        for (int g = 0; g < groups.length; g++) {
            List<Object> reply;
            try {
                reply = await(replies.get(g), operation, deadline);
            } catch (StoreException e) {
                if (e.retriable()) {
                    // The script may have run, or run unreplicated: the next claim of these keys sends these tokens.
                    for (int i = 0; i < size; i++) {
                        unclaimed.remember(requests.get(i), tokens[i], reusableUntil[i]);
                    }
                }
                throw e;
            }
            decode(groups[g], reply, tokens, results, operation);
        }
        return List.of(results);
    }

    @Override
    public boolean complete(StoreKey key, long token, Duration retention) {
        String operation = describe("a complete", key);
        byte[] message = keys.encode(key);
        byte[] id = RedisKeys.utf8(key.id());
        return yes(await(COMPLETE.run(redis, replicas.behind(), ScriptOutputType.INTEGER,
                new byte[][] {message, familyOf(message, id)}, ascii(token), RedisRecords.token(token),
                ascii(millis(retention)), pack, fieldOf(id)), operation, System.nanoTime() + writeWaitNanos), operation);
    }

    @Override
    public boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
        Objects.requireNonNull(advance, "advance");
        CompletionResult result = watermarks.completeAll(List.of(new CompletionRequest(key, token, retention, advance)))
                .get(0);
        if (result instanceof CompletionResult.Failed failed) {
            throw failed.cause();
        }
        return CompletionResult.COMPLETED.equals(result);
    }

    @Override
    public long watermark(StoreKey aggregate) {
        Objects.requireNonNull(aggregate, "aggregate");
        return watermarks.watermark(aggregate);
    }

    @Override
    public boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply) {
        ReplyStore.check(reply);
        CompletionResult result = watermarks.completeAll(List.of(new CompletionRequest(key, token, retention, null,
                reply))).get(0);
        if (result instanceof CompletionResult.Failed failed) {
            throw failed.cause();
        }
        return CompletionResult.COMPLETED.equals(result);
    }

    @Override
    public Optional<StoredReply> reply(StoreKey key) {
        Objects.requireNonNull(key, "key");
        String operation = describe("reading the reply", key);
        byte[] message = keys.encode(key);
        byte[] id = RedisKeys.utf8(key.id());
        List<Object> reply = await(REPLY.run(redis, ScriptOutputType.MULTI,
                new byte[][] {message, replyKey(message, operation), familyOf(message, id)}, fieldOf(id)), operation,
                System.nanoTime() + waitNanos);
        if (reply == null || reply.isEmpty()) {
            return Optional.empty();
        }
        if (reply.size() != 2 || !Long.valueOf(1).equals(reply.get(0)) || !(reply.get(1) instanceof byte[] value)) {
            throw failures.unexpectedReply(operation, reply.size() + " values");
        }
        try {
            return Optional.of(RedisReplies.decode(value));
        } catch (IllegalArgumentException e) {
            throw failures.notARecord(operation);
        }
    }

    /**
     * The reply key of the message key {@code message}: in Cluster mode on the same slot, which a prefix opening with
     * empty braces ({@code {}}) makes impossible.
     *
     * @throws StoreException, not retriable, naming {@code operation}, when it cannot lie on that slot
     */
    byte[] replyKey(byte[] message, String operation) {
        if (connection.cluster() && !keys.replyOnSlot(message)) {
            throw new StoreException(failures.endpoint() + ": " + operation + " is impossible in Cluster mode with"
                    + " key-prefix '" + keyPrefix + "': its first braces hold nothing, so Redis hashes whole keys and"
                    + " no key of the reply can share the message key's slot. Remove the empty braces or put a name"
                    + " in them (\"{idem}:\")", false);
        }
        return keys.replyOf(message);
    }

    @Override
    public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        int size = requests.size();
        if (size == 0) {
            return List.of();
        }
        if (RedisWatermarks.anyAdvance(requests) || RedisReplies.anyReply(requests)) {
            return watermarks.completeAll(requests);
        }
        byte[][] redisKeys = new byte[size][];
        byte[][] ids = new byte[size][];
        for (int i = 0; i < size; i++) {
            ids[i] = RedisKeys.utf8(requests.get(i).key().id());
            redisKeys[i] = keys.encode(requests.get(i).key());
        }
        int[][] groups = connection.cluster() ? bySlot(redisKeys) : oneGroup(redisKeys);
        Supplier<CompletableFuture<Long>> behind = replicas.behind();
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>(groups.length);
        for (int[] group : groups) {
            replies.add(COMPLETE_ALL.run(redis, behind, ScriptOutputType.MULTI, withFamilies(group, redisKeys, ids),
                    completionArgs(group, requests, ids)));
        }
        String operation = "a completion of " + size + (size == 1 ? " key" : " keys");
        long deadline = System.nanoTime() + writeWaitNanos;
        CompletionResult[] results = new CompletionResult[size];
        StoreException firstFailure = null;
        int failedGroups = 0;
        for (int g = 0; g < groups.length; g++) {
            try {
                decodeCompletions(groups[g], await(replies.get(g), operation, deadline), requests, results, operation);
            } catch (StoreException e) {
                // Other slots' calls may have landed: only this call's keys are in doubt.
                failedGroups++;
                firstFailure = firstFailure == null ? e : firstFailure;
                for (int i : groups[g]) {
                    results[i] = new CompletionResult.Failed(e);
                }
            }
        }
        if (failedGroups == groups.length) {
            throw firstFailure;
        }
        return List.of(results);
    }

    @Override
    public boolean release(StoreKey key, long token) {
        return yes(RELEASE, true, "a release", key, ascii(token));
    }

    @Override
    public boolean renew(StoreKey key, long token, Duration lease) {
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive: " + lease);
        }
        return yes(RENEW, true, "a renewal", key, ascii(token), ascii(micros(lease)));
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        String operation = describe("recording a start", key);
        Supplier<CompletableFuture<Long>> behind = replicas.behind();
        Object reply = await(START.run(redis, behind, ScriptOutputType.INTEGER, new byte[][] {keys.encode(key)},
                ascii(token)), operation, System.nanoTime() + writeWaitNanos);
        if (reply instanceof Long starts && starts >= 0 && starts <= Integer.MAX_VALUE) {
            return starts.intValue();
        }
        throw failures.unexpectedReply(operation, reply);
    }

    @Override
    public Optional<Map<String, byte[]>> steps(StoreKey key, long token) {
        Objects.requireNonNull(key, "key");
        String operation = describe("reading the steps", key);
        List<Object> reply = await(STEPS.run(redis, ScriptOutputType.MULTI, stepKeys(key, operation), ascii(token)),
                operation, System.nanoTime() + waitNanos);
        if (reply == null || reply.isEmpty()) {
            return Optional.empty();
        }
        if (!Long.valueOf(1).equals(reply.get(0)) || reply.size() % 2 != 1) {
            throw failures.unexpectedReply(operation, reply.size() + " values");
        }
        Map<String, byte[]> steps = new HashMap<>();
        for (int i = 1; i < reply.size(); i += 2) {
            if (!(reply.get(i) instanceof byte[] name) || !(reply.get(i + 1) instanceof byte[] value)) {
                throw failures.unexpectedReply(operation, "a step that is not a name and a value");
            }
            steps.put(RedisKeys.text(name, 0), value);
        }
        return Optional.of(steps);
    }

    @Override
    public boolean recordStep(StoreKey key, long token, String name, byte[] value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        StepStore.check(name, value);
        String operation = describe("recording step '" + abbreviate(name) + "'", key);
        Supplier<CompletableFuture<Long>> behind = replicas.behind();
        return yes(await(RECORD_STEP.run(redis, behind, ScriptOutputType.INTEGER, stepKeys(key, operation),
                ascii(token), RedisKeys.utf8(name), value), operation, System.nanoTime() + writeWaitNanos), operation);
    }

    /**
     * The message key and its steps key, for a script that touches both: in Cluster mode on one slot, which a
     * prefix opening with empty braces ({@code {}}) makes impossible.
     */
    private byte[][] stepKeys(StoreKey key, String operation) {
        if (connection.cluster() && !keys.stepsOnSlot(key)) {
            throw new StoreException(failures.endpoint() + ": " + operation + " is impossible in Cluster mode with"
                    + " key-prefix '" + keyPrefix + "': its first braces hold nothing, so Redis hashes whole keys and"
                    + " no key of the steps can share the message key's slot. Remove the empty braces or put a name"
                    + " in them (\"{idem}:\")", false);
        }
        return new byte[][] {keys.encode(key), keys.steps(key)};
    }

    @Override
    public Optional<StoredKey> inspect(StoreKey key) {
        Objects.requireNonNull(key, "key");
        String operation = describe("an inspection", key);
        byte[] message = keys.encode(key);
        byte[] id = RedisKeys.utf8(key.id());
        List<Object> reply = await(INSPECT.run(redis, ScriptOutputType.MULTI,
                new byte[][] {message, familyOf(message, id)}, fieldOf(id)), operation, System.nanoTime() + waitNanos);
        Instant now = Instant.now();
        if (reply == null || reply.isEmpty()) {
            return Optional.empty();
        }
        if (reply.size() != 5 || !(reply.get(0) instanceof Long kind) || !(reply.get(1) instanceof Long attempts)
                || !(reply.get(2) instanceof byte[] fingerprint) || !(reply.get(3) instanceof Long left)
                || !(reply.get(4) instanceof Long starts)
                || (kind != ACQUIRED && kind != DUPLICATE) || attempts < 1 || attempts > Integer.MAX_VALUE
                || starts < 0 || starts > Integer.MAX_VALUE) {
            throw failures.unexpectedReply(operation, reply);
        }
        StoredKey.State state = kind == ACQUIRED ? StoredKey.State.CLAIMED : StoredKey.State.COMPLETED;
        // A completed key without TTL (only a person can have removed it) is never forgotten.
        Instant expiresAt = left < 0 ? Instant.MAX : now.plus(left, ChronoUnit.MICROS);
        String given;
        try {
            given = RedisRecords.fingerprint(fingerprint);
        } catch (IllegalArgumentException e) {
            throw failures.unexpectedReply(operation, reply);
        }
        return Optional.of(new StoredKey(state, attempts.intValue(), given, expiresAt, starts.intValue()));
    }

    @Override
    public boolean delete(StoreKey key) {
        Objects.requireNonNull(key, "key");
        String operation = describe("a delete", key);
        byte[] message = keys.encode(key);
        // Its steps and its reply go with it, where they can lie on its slot; else the key itself stands in for them.
        boolean anywhere = !connection.cluster();
        byte[] id = RedisKeys.utf8(key.id());
        byte[][] all = {message, anywhere || keys.stepsOnSlot(message) ? keys.stepsOf(message) : message,
                anywhere || keys.replyOnSlot(message) ? keys.replyOf(message) : message, familyOf(message, id)};
        return yes(await(DELETE.run(redis, ScriptOutputType.INTEGER, all, fieldOf(id)), operation,
                System.nanoTime() + waitNanos), operation);
    }

    @Override
    public StoreStats stats() {
        return stats(STATS_PAGE, STATS_MAX_KEYS, STATS_BUDGET);
    }

    @Override
    public KeyPage list(String namespace, KeyFilter filter, String cursor, int limit) {
        return listing.list(namespace, filter, cursor, limit);
    }

    @Override
    public PurgeBatch purge(String namespace, Instant expiringBefore, String cursor, int limit) {
        return listing.purge(namespace, expiringBefore, cursor, limit);
    }

    /** {@link #stats()} with its bounds given; for tests. */
    StoreStats stats(int page, long maxKeys, Duration budget) {
        String operation = "counting keys under key-prefix '" + keyPrefix + "' (SCAN)";
        long started = System.nanoTime();
        long nowMicros = serverMicros(operation);
        ScanArgs args = ScanArgs.Builder.matches(RedisKeys.utf8(glob(keyPrefix))).limit(page);
        KeyScanCursor<byte[]> cursor = await(redis.scan(args).toCompletableFuture(), operation,
                System.nanoTime() + waitNanos);
        long seen = 0;
        long claimed = 0;
        long completed = 0;
        while (true) {
            List<CompletableFuture<byte[]>> values = new ArrayList<>(cursor.getKeys().size());
            List<CompletableFuture<Long>> buckets = new ArrayList<>();
            for (byte[] key : cursor.getKeys()) {
                if (keys.isPacked(key)) {
                    // A bucket's name ends with its number, a family key's with its namespace's colon.
                    if (key[key.length - 1] != ':') {
                        buckets.add(redis.hlen(key).toCompletableFuture());
                    }
                } else if (!keys.isWatermark(key) && !keys.isSteps(key) && !keys.isReply(key)) {
                    values.add(redis.get(key).toCompletableFuture());
                }
            }
            long deadline = System.nanoTime() + waitNanos;
            for (CompletableFuture<Long> fields : buckets) {
                // Its expired fields too, until a sweep drops them.
                completed += await(fields, operation, deadline);
            }
            for (CompletableFuture<byte[]> value : values) {
                switch (classify(await(value, operation, deadline), nowMicros, operation)) {
                    case CLAIMED -> claimed++;
                    case COMPLETED -> completed++;
                    default -> { }
                }
            }
            seen += values.size();
            if (cursor.isFinished()) {
                return new StoreStats(claimed, completed, false);
            }
            if (seen >= maxKeys || System.nanoTime() - started >= budget.toNanos()) {
                return new StoreStats(claimed, completed, true);
            }
            cursor = await(redis.scan(cursor, args).toCompletableFuture(), operation, System.nanoTime() + waitNanos);
        }
    }

    private enum Seen { CLAIMED, COMPLETED, NEITHER }

    /** What a record counts as at {@code nowMicros}; {@code value} is {@code null} for a key gone since the SCAN. */
    private Seen classify(byte[] value, long nowMicros, String operation) {
        if (value == null) {
            return Seen.NEITHER;
        }
        if (RedisRecords.compactCompleted(value)) {
            return Seen.COMPLETED;
        }
        String record = new String(value, StandardCharsets.UTF_8);
        String[] fields = record.split("\\|", 6);
        if (fields.length == 6 && fields[0].equals("D")) {
            return Seen.COMPLETED;
        }
        if (fields.length == 6 && fields[0].equals("C") && fields[3].matches("\\d{1,18}")) {
            return Long.parseLong(fields[3]) > nowMicros ? Seen.CLAIMED : Seen.NEITHER;
        }
        throw failures.notARecord(operation);
    }

    /** The server's clock ({@code TIME}) in microseconds. */
    private long serverMicros(String operation) {
        List<byte[]> time = await(redis.time().toCompletableFuture(), operation, System.nanoTime() + waitNanos);
        try {
            return Long.parseLong(new String(time.get(0), StandardCharsets.US_ASCII)) * 1_000_000L
                    + Long.parseLong(new String(time.get(1), StandardCharsets.US_ASCII));
        } catch (RuntimeException e) {
            throw failures.unexpectedReply(operation + " (TIME)", time);
        }
    }

    /** A {@code SCAN MATCH} pattern for every key starting with {@code prefix}. */
    static String glob(String prefix) {
        return prefix.replaceAll("([\\\\*?\\[\\]])", "\\\\$1") + "*";
    }

    /** Sends {@code PING}; throws a {@link dev.idem.spi.StoreException} if Redis does not answer. */
    @Override
    public void checkHealth() {
        await(redis.ping().toCompletableFuture(), "a health check (PING)", System.nanoTime() + waitNanos);
    }

    @Override
    public void close() {
        connection.close();
    }

    @Override
    public String toString() {
        return "RedisDedupStore[" + failures.endpoint() + (connection.cluster() ? " (cluster)" : "")
                + ", key-prefix=" + keyPrefix + "]";
    }

    /**
     * Runs a one-key script answering 1 (yes) or 0 (no); {@code replicated}: a write that waits for replicas when
     * {@code wait.replicas} asks for it.
     */
    private boolean yes(LuaScript script, boolean replicated, String what, StoreKey key, byte[]... args) {
        String operation = describe(what, key);
        Supplier<CompletableFuture<Long>> behind = replicated ? replicas.behind() : null;
        return yes(await(script.run(redis, behind, ScriptOutputType.INTEGER, new byte[][] {keys.encode(key)}, args),
                operation, System.nanoTime() + (replicated ? writeWaitNanos : waitNanos)), operation);
    }

    private boolean yes(Object reply, String operation) {
        if (reply instanceof Long answer && (answer == 0 || answer == 1)) {
            return answer == 1;
        }
        throw failures.unexpectedReply(operation, reply);
    }

    static String describe(String what, StoreKey key) {
        return what + " of key '" + abbreviate(key.id()) + "' in namespace '" + abbreviate(key.namespace()) + "'";
    }

    <T> T await(CompletableFuture<T> reply, String operation, long deadline) {
        try {
            return reply.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw failures.of(operation, e.getCause());
        } catch (TimeoutException e) {
            reply.cancel(false);
            throw failures.timedOut(operation);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failures.interrupted(operation);
        }
    }

    private void decode(int[] group, List<Object> reply, long[] tokens, ClaimResult[] results, String operation) {
        if (reply == null || reply.size() != 2 * group.length) {
            throw failures.unexpectedReply(operation, reply == null ? null : reply.size() + " values for "
                    + group.length + " keys");
        }
        for (int j = 0; j < group.length; j++) {
            int i = group[j];
            if (!(reply.get(2 * j) instanceof Long kind) || !(reply.get(2 * j + 1) instanceof Long value)) {
                throw failures.unexpectedReply(operation, reply.subList(2 * j, 2 * j + 2));
            }
            if (kind == ACQUIRED && value >= 1 && value <= Integer.MAX_VALUE) {
                results[i] = new Acquired(tokens[i], value.intValue());
            } else if (kind == DUPLICATE) {
                results[i] = value == 1 ? MATCHES : DIFFERS;
            } else if (kind == IN_PROGRESS && value > 0) {
                results[i] = new InProgress(Duration.ofNanos(Math.multiplyExact(value, 1000L)));
            } else {
                throw failures.unexpectedReply(operation, List.of(kind, value));
            }
        }
    }

    /** Reads one group's reply to {@code complete_all.lua}: 1, 0, or the error text of that key's own failure. */
    void decodeCompletions(int[] group, List<Object> reply, List<CompletionRequest> requests,
            CompletionResult[] results, String operation) {
        if (reply == null || reply.size() != group.length) {
            throw failures.unexpectedReply(operation, reply == null ? null : reply.size() + " values for "
                    + group.length + " keys");
        }
        for (int j = 0; j < group.length; j++) {
            int i = group[j];
            Object answer = reply.get(j);
            if (answer instanceof Long done && (done == 0 || done == 1)) {
                results[i] = done == 1 ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER;
            } else if (answer instanceof byte[] error) {
                results[i] = new CompletionResult.Failed(failures.refused(
                        describe("a batched completion", requests.get(i).key()),
                        new String(error, StandardCharsets.UTF_8)));
            } else {
                throw failures.unexpectedReply(operation, answer);
            }
        }
    }

    private byte[][] completionArgs(int[] group, List<CompletionRequest> requests, byte[][] ids) {
        int n = group.length;
        byte[][] args = new byte[n * 4 + 1][];
        for (int j = 0; j < n; j++) {
            CompletionRequest request = requests.get(group[j]);
            args[3 * j] = ascii(request.token());
            args[3 * j + 1] = RedisRecords.token(request.token());
            args[3 * j + 2] = ascii(millis(request.retention()));
            args[3 * n + 1 + j] = fieldOf(ids[group[j]]);
        }
        args[3 * n] = pack;
        return args;
    }

    /** Whether completions are written packed ({@code '1'}) or as strings ({@code '0'}), as scripts take it. */
    byte[] packFlag() {
        return pack;
    }

    /**
     * The family of buckets where the message key {@code message}, whose ID is {@code id}, may be packed: one per
     * namespace on a standalone server, one per namespace and hash slot in Cluster mode; the key itself where no
     * family can lie on its slot (then {@link #fieldOf} is empty, and scripts look for none).
     */
    byte[] familyOf(byte[] message, byte[] id) {
        if (!connection.cluster()) {
            return keys.namespaceFamilyOf(message, id);
        }
        return packable ? keys.familyOf(message, id) : message;
    }

    /**
     * The ID {@code id} as scripts take it for its packed completion ({@link RedisKeys#hashedField}), or empty where
     * none can be packed.
     */
    byte[] fieldOf(byte[] id) {
        return packable ? RedisKeys.hashedField(id) : NO_FIELD;
    }

    /** The message keys of {@code group}, then each one's family of buckets, for a script that reads packed ones. */
    byte[][] withFamilies(int[] group, byte[][] messages, byte[][] ids) {
        byte[][] out = new byte[group.length * 2][];
        for (int j = 0; j < group.length; j++) {
            out[j] = messages[group[j]];
            out[group.length + j] = familyOf(messages[group[j]], ids[group[j]]);
        }
        return out;
    }

    private byte[][] claimArgs(int[] group, List<ClaimRequest> requests, long[] tokens, byte[][] ids) {
        byte[][] args = new byte[group.length * 7][];
        for (int j = 0; j < group.length; j++) {
            ClaimRequest request = requests.get(group[j]);
            // At least 1µs, so that a key repeated in the batch always finds the first claim's lease running.
            long leaseMicros = Math.max(1, micros(request.lease()));
            long retentionMillis = millis(request.retention());
            args[6 * j] = ascii(tokens[group[j]]);
            args[6 * j + 1] = ascii(leaseMicros);
            args[6 * j + 2] = ascii(retentionMillis);
            args[6 * j + 3] = RedisRecords.fingerprint(request.fingerprint());
            // The TTL write_claim (record.lua) gives a claim: its lease in whole ms, rounded up, plus its retention.
            args[6 * j + 4] = ascii((leaseMicros + 999) / 1000 + retentionMillis);
            args[6 * j + 5] = RedisRecords.legacy(request.fingerprint());
            args[6 * group.length + j] = fieldOf(ids[group[j]]);
        }
        return args;
    }

    /**
     * Groups the indexes of {@code keys} by Redis Cluster hash slot, as a script may only touch keys of one
     * slot. Within a group the indexes keep request order, so of a key repeated in the batch the first
     * request is the one that acquires it, and a key's completions run in the order they were asked for.
     */
    static int[][] bySlot(byte[][] keys) {
        long[] slotAndIndex = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            slotAndIndex[i] = (long) SlotHash.getSlot(keys[i]) << 32 | i;
        }
        Arrays.sort(slotAndIndex);
        List<int[]> groups = new ArrayList<>();
        int start = 0;
        for (int end = 1; end <= slotAndIndex.length; end++) {
            if (end == slotAndIndex.length || slotAndIndex[end] >>> 32 != slotAndIndex[start] >>> 32) {
                int[] group = new int[end - start];
                for (int j = 0; j < group.length; j++) {
                    group[j] = (int) slotAndIndex[start + j];
                }
                groups.add(group);
                start = end;
            }
        }
        return groups.toArray(new int[0][]);
    }

    /** All keys in one group: a standalone server runs a script over any keys. */
    static int[][] oneGroup(byte[][] keys) {
        int[] all = new int[keys.length];
        Arrays.setAll(all, i -> i);
        return new int[][] {all};
    }

    static byte[][] keysOf(int[] group, byte[][] keys) {
        byte[][] out = new byte[group.length][];
        for (int j = 0; j < group.length; j++) {
            out[j] = keys[group[j]];
        }
        return out;
    }

    /** A duration in whole microseconds, rounded up; negative as zero, capped at {@link #LONGEST}. */
    static long micros(Duration duration) {
        return divideRoundingUp(duration, 1_000L);
    }

    /** A duration in whole milliseconds, rounded up; negative as zero, capped at {@link #LONGEST}. */
    static long millis(Duration duration) {
        return divideRoundingUp(duration, 1_000_000L);
    }

    private static long divideRoundingUp(Duration duration, long nanosPerUnit) {
        if (duration.isNegative() || duration.isZero()) {
            return 0;
        }
        long nanos = (duration.compareTo(LONGEST) > 0 ? LONGEST : duration).toNanos();
        return (nanos + nanosPerUnit - 1) / nanosPerUnit;
    }

    static byte[] ascii(long number) {
        return Long.toString(number).getBytes(StandardCharsets.US_ASCII);
    }

    private static String abbreviate(String text) {
        return text.length() <= 64 ? text : text.substring(0, 61) + "...";
    }
}
