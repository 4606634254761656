package dev.idem.store.redis;

import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The sequence guard's watermarks of a {@link RedisDedupStore}: one Redis string per aggregate (see
 * {@link RedisKeys#watermark}), holding the highest sequence number completed for it, with the watermark's
 * retention as its TTL, set again by every completion that advances it. {@link #watermark} is one {@code GET}.
 *
 * <p><b>Completions that advance.</b> A batch holding at least one {@link CompletionRequest#advance()} runs
 * {@code complete_advance.lua} instead of {@code complete_all.lua}: one script call per batch (standalone), or
 * per hash slot (Cluster), that completes each key as {@code complete_all.lua} would and, when the completion
 * succeeds (a retry by the owner included), raises the watermark in the same script: set to the number if it is
 * higher or the watermark is absent, the TTL set again either way, the comparison on decimal strings so every
 * {@code long} is exact. A script runs atomically on the server, so the key and its watermark change together.
 * A watermark key holding something else fails that completion before it writes anything.
 *
 * <p><b>Completions with replies.</b> The same script stores the replies ({@link RedisReplies}) of a batch holding at
 * least one {@link CompletionRequest#reply()}: a completion done now (not a retry by its owner) writes its reply key,
 * on its message key's slot, in the same script, so the two change together in Cluster mode too. A batch with replies
 * is refused whole, before anything is sent, where a reply key cannot share its message key's slot (Cluster mode with
 * a prefix opening with empty braces).
 *
 * <p><b>Redis Cluster.</b> A script may only touch keys of one slot, and an aggregate's events have keys on every
 * slot, so a watermark can share the slot of only some of them. It is raised in the completion's own script
 * whenever it does (always when {@code key-prefix} holds a hash tag such as {@code "{idem}:"}, which puts every
 * key of the store on one slot). Otherwise it is raised by a second call ({@code raise.lua}, batched per slot of
 * the watermarks) sent right after the completion's reply, for the completions that succeeded: then the two are
 * <em>not</em> atomic. A failure of that second call answers the completion {@link CompletionResult.Failed}
 * (retriable if the failure is), so the runtime completes it again, which the owner may (idempotently) and which
 * raises again; only a crash between the two calls leaves the key completed and its watermark below it, and the
 * aggregate's next event then waits as if for a gap (or, where gaps are accepted, runs). A hash tag in the
 * watermark key would not help: no single slot holds all the keys of an aggregate's events, and a tag per
 * namespace would pile a pipeline's watermarks onto one node.
 *
 * <p>Both scripts are writes that wait for replicas when {@code wait.replicas} asks for it ({@link ReplicaWait}).
 *
 * <p>Thread-safe: it holds nothing but the store's connection.
 */
final class RedisWatermarks {

    static final LuaScript COMPLETE_ADVANCE = LuaScript.named("complete_advance", "watermark");
    static final LuaScript RAISE = LuaScript.named("raise", "watermark");

    private static final byte[] NONE = RedisDedupStore.ascii(0);
    private static final byte[] NO_REPLY = new byte[0];

    private final RedisDedupStore store;
    private final RedisClusterAsyncCommands<byte[], byte[]> redis;
    private final boolean cluster;
    private final RedisKeys keys;
    private final Failures failures;
    private final long waitNanos;

    RedisWatermarks(RedisDedupStore store, RedisConnection connection, RedisKeys keys, Failures failures,
            long waitNanos) {
        this.store = store;
        this.redis = connection.commands();
        this.cluster = connection.cluster();
        this.keys = keys;
        this.failures = failures;
        this.waitNanos = waitNanos;
    }

    /** Whether any request of the batch advances a watermark, so that the batch needs this class's script. */
    static boolean anyAdvance(List<CompletionRequest> requests) {
        for (CompletionRequest request : requests) {
            if (request.advance() != null) {
                return true;
            }
        }
        return false;
    }

    /** The aggregate's watermark, one {@code GET}: 0 when absent. */
    long watermark(StoreKey aggregate) {
        String operation = RedisDedupStore.describe("reading the watermark", aggregate);
        byte[] value = store.await(redis.get(keys.watermark(aggregate)).toCompletableFuture(), operation,
                System.nanoTime() + waitNanos);
        if (value == null) {
            return 0;
        }
        String text = new String(value, StandardCharsets.UTF_8);
        if (!text.matches("\\d{1,19}")) {
            throw failures.notARecord(operation);
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw failures.notARecord(operation);
        }
    }

    /**
     * Completes the batch, raising each request's watermark and storing each request's reply with its key; answers as
     * {@link RedisDedupStore#completeAll} does. Throws only when no call of the batch was answered, or, before
     * sending anything, when a reply's key cannot share its message key's slot.
     */
    List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        int size = requests.size();
        byte[][] messageKeys = new byte[size][];
        byte[][] ids = new byte[size][];
        byte[][] watermarkKeys = new byte[size][];
        byte[][] replyKeys = new byte[size][];
        boolean[] later = new boolean[size];
        for (int i = 0; i < size; i++) {
            CompletionRequest request = requests.get(i);
            messageKeys[i] = keys.encode(request.key());
            ids[i] = RedisKeys.utf8(request.key().id());
            if (request.reply() != null) {
                replyKeys[i] = store.replyKey(messageKeys[i],
                        RedisDedupStore.describe("completing with a reply", request.key()));
            }
            if (request.advance() != null) {
                watermarkKeys[i] = keys.watermark(request.advance().aggregate());
                later[i] = cluster && SlotHash.getSlot(watermarkKeys[i]) != SlotHash.getSlot(messageKeys[i]);
            }
        }
        int[][] groups = cluster ? RedisDedupStore.bySlot(messageKeys) : RedisDedupStore.oneGroup(messageKeys);
        Supplier<CompletableFuture<Long>> behind = store.replicated();
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>(groups.length);
        for (int[] group : groups) {
            replies.add(completeAndRaise(group, requests, messageKeys, ids, watermarkKeys, replyKeys, later, behind));
        }
        String operation = "a completion with sequence advances or replies of " + size + (size == 1 ? " key" : " keys");
        long deadline = System.nanoTime() + waitNanos;
        CompletionResult[] results = new CompletionResult[size];
        StoreException firstFailure = null;
        int failedGroups = 0;
        for (int g = 0; g < groups.length; g++) {
            try {
                store.decodeCompletions(groups[g], store.await(replies.get(g), operation, deadline), requests, results,
                        operation);
            } catch (StoreException e) {
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
        raiseLater(requests, watermarkKeys, later, results);
        return List.of(results);
    }

    /** One {@code complete_advance.lua} call for a group of keys on one slot (all keys, standalone). */
    private CompletableFuture<List<Object>> completeAndRaise(int[] group, List<CompletionRequest> requests,
            byte[][] messageKeys, byte[][] ids, byte[][] watermarkKeys, byte[][] replyKeys, boolean[] later,
            Supplier<CompletableFuture<Long>> behind) {
        List<byte[]> scriptKeys = new ArrayList<>(group.length * 3);
        for (int i : group) {
            scriptKeys.add(messageKeys[i]);
        }
        // A watermark raised by several completions of the batch is one key of the call: its index, from 1.
        Map<ByteBuffer, Integer> watermarkIndex = new HashMap<>();
        byte[][] args = new byte[2 + 9 * group.length][];
        args[0] = RedisDedupStore.ascii(group.length);
        for (int j = 0; j < group.length; j++) {
            int i = group[j];
            CompletionRequest request = requests.get(i);
            int a = 1 + 8 * j;
            args[a] = RedisDedupStore.ascii(request.token());
            args[a + 1] = RedisRecords.token(request.token());
            args[a + 2] = RedisDedupStore.ascii(RedisDedupStore.millis(request.retention()));
            if (request.reply() == null) {
                args[a + 6] = NONE;
                args[a + 7] = NO_REPLY;
            } else {
                // A key repeated in the batch adds its reply key again, harmlessly: the script writes a reply only
                // for a completion done now, never for a retry.
                scriptKeys.add(replyKeys[i]);
                args[a + 6] = RedisDedupStore.ascii(scriptKeys.size() - group.length);
                args[a + 7] = RedisReplies.encode(request.reply());
            }
            SequenceAdvance advance = request.advance();
            if (advance == null || later[i]) {
                args[a + 3] = NONE;
                args[a + 4] = NONE;
                args[a + 5] = NONE;
                continue;
            }
            int index = watermarkIndex.computeIfAbsent(ByteBuffer.wrap(watermarkKeys[i]), k -> {
                scriptKeys.add(watermarkKeys[i]);
                return scriptKeys.size() - group.length;
            });
            args[a + 3] = RedisDedupStore.ascii(index);
            args[a + 4] = RedisDedupStore.ascii(advance.number());
            args[a + 5] = RedisDedupStore.ascii(RedisDedupStore.millis(advance.retention()));
        }
        // Then each completion's family of buckets, the last keys (complete_advance.lua).
        args[1 + 8 * group.length] = store.packFlag();
        for (int j = 0; j < group.length; j++) {
            int i = group[j];
            scriptKeys.add(store.familyOf(messageKeys[i], ids[i]));
            args[2 + 8 * group.length + j] = store.fieldOf(ids[i]);
        }
        return COMPLETE_ADVANCE.run(redis, behind, ScriptOutputType.MULTI, scriptKeys.toArray(new byte[0][]), args);
    }

    /**
     * Cluster mode: raises the watermarks on another slot than their completion's key, for the completions that
     * succeeded, one {@code raise.lua} call per slot of the watermarks, all sent at once. A completion whose raise
     * failed is answered {@link CompletionResult.Failed}, to be completed (and raised) again.
     */
    private void raiseLater(List<CompletionRequest> requests, byte[][] watermarkKeys, boolean[] later,
            CompletionResult[] results) {
        List<Integer> pending = new ArrayList<>();
        for (int i = 0; i < later.length; i++) {
            if (later[i] && CompletionResult.COMPLETED.equals(results[i])) {
                pending.add(i);
            }
        }
        if (pending.isEmpty()) {
            return;
        }
        byte[][] raised = new byte[pending.size()][];
        for (int p = 0; p < raised.length; p++) {
            raised[p] = watermarkKeys[pending.get(p)];
        }
        int[][] groups = RedisDedupStore.bySlot(raised);
        Supplier<CompletableFuture<Long>> behind = store.replicated();
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>(groups.length);
        for (int[] group : groups) {
            byte[][] args = new byte[2 * group.length][];
            for (int j = 0; j < group.length; j++) {
                SequenceAdvance advance = requests.get(pending.get(group[j])).advance();
                args[2 * j] = RedisDedupStore.ascii(advance.number());
                args[2 * j + 1] = RedisDedupStore.ascii(RedisDedupStore.millis(advance.retention()));
            }
            replies.add(RAISE.run(redis, behind, ScriptOutputType.MULTI, RedisDedupStore.keysOf(group, raised), args));
        }
        String operation = "raising " + raised.length + (raised.length == 1 ? " watermark" : " watermarks")
                + " on other slots than their completed keys";
        long deadline = System.nanoTime() + waitNanos;
        for (int g = 0; g < groups.length; g++) {
            int[] group = groups[g];
            List<Object> reply;
            try {
                reply = store.await(replies.get(g), operation, deadline);
                if (reply == null || reply.size() != group.length) {
                    throw failures.unexpectedReply(operation, reply == null ? null : reply.size() + " values for "
                            + group.length + " keys");
                }
            } catch (StoreException e) {
                for (int p : group) {
                    results[pending.get(p)] = new CompletionResult.Failed(e);
                }
                continue;
            }
            for (int j = 0; j < group.length; j++) {
                int i = pending.get(group[j]);
                Object answer = reply.get(j);
                if (answer instanceof byte[] error) {
                    results[i] = new CompletionResult.Failed(failures.refused(
                            RedisDedupStore.describe("raising the watermark after completing", requests.get(i).key()),
                            new String(error, StandardCharsets.UTF_8)));
                } else if (!(answer instanceof Long done && done == 1)) {
                    results[i] = new CompletionResult.Failed(failures.unexpectedReply(operation, answer));
                }
            }
        }
    }
}
