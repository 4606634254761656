package dev.idem.store.redis;

import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * {@code list} and {@code purge} of a {@link RedisDedupStore}: {@code SCAN}s of one namespace's keys.
 *
 * <p><b>Scanning.</b> A namespace's message keys all start with the same bytes ({@link RedisKeys#namespacePrefix}:
 * the prefix, the namespace's length, the namespace), so {@code SCAN MATCH} with those bytes (and a listing's ID
 * prefix) escaped and {@code *} after them finds exactly its keys on the server: a watermark key ({@code seq:}
 * after the prefix) or another namespace's never matches. {@code SCAN} walks the whole database, though, matching
 * or not, so a call's cost follows the database's size, not the namespace's. In Cluster mode each master is
 * scanned in turn, by node ID. The keys a {@code SCAN} returns are read by {@code list.lua} (one call per batch,
 * or per hash slot in Cluster mode, all sent at once) on one reading of the server's clock, as {@code inspect.lua}
 * reads one key.
 *
 * <p><b>The cursor</b> is the {@code SCAN} cursor (with the master's node ID in Cluster mode) and, when a batch
 * held more keys than the page had room for, the IDs of those left over, listed first by the next call. So
 * every key is listed from the batch that found it, and {@code SCAN}'s guarantee carries over: a key present
 * from the first call to the last is listed, and exactly once unless Redis shrank its hash table during the
 * listing (after many keys were removed), when {@code SCAN} may return a key a second time. Each call stops
 * when its page is full, after {@link #CALL_BUDGET}, or at the end. The count asked of each {@code SCAN}
 * follows how many keys the last one matched, so a sparse namespace in a large database takes few round trips
 * and a dense one leaves few IDs over for the cursor to carry.
 *
 * <p><b>Packed completions</b> ({@code pack-completed}) are fields of buckets, not keys: after the message keys, a
 * second scan (its cursor marked {@code p}) finds the namespace's buckets ({@link RedisKeys#bucketPattern}), reads
 * their fields' IDs ({@code HKEYS}) and reads those as packed completions only, so a key with a string, listed by the
 * first scan, is not listed again. A bucket split during a listing may have a packed key listed twice, or missed when
 * it moved into a bucket made after the scan began.
 *
 * <p><b>Purge</b> scans the same way, {@value #PURGE_SCAN} keys a round, reads them with {@code list.lua} and
 * sends those completed within the time to {@code purge.lua}, which checks each again and deletes it in one
 * atomic step (per hash slot in Cluster mode). When more qualify than the call's limit allows, its cursor stays
 * before that batch, and the next call scans the batch again. A value that is not an Idem record is never
 * deleted, and fails a listing, as it fails {@code stats}.
 *
 * <p>In Cluster mode a change of masters during a listing or a purge (a failover, a node added) fails the call
 * that meets it; starting again is safe.
 *
 * <p>Thread-safe: it holds nothing but the store's connection.
 */
final class RedisListing {

    static final LuaScript LIST = LuaScript.named("list");
    static final LuaScript PURGE = LuaScript.named("purge");
    private static final byte[] STRING_FIRST = {'s'};
    private static final byte[] PACKED_ONLY = {'p'};

    /** How long one call scans before it answers with what it has. */
    static final Duration CALL_BUDGET = Duration.ofSeconds(2);
    /** The count a listing's first {@code SCAN} asks for at least, and its further ones at most. */
    static final int LIST_SCAN_MIN = 100;
    static final int LIST_SCAN_MAX = 10_000;
    /** The count each {@code SCAN} of a purge asks for. */
    static final int PURGE_SCAN = 1000;

    private static final long NOT_A_RECORD = -1;
    private static final long CLAIMED = 1;
    private static final long COMPLETED = 2;
    /** What {@code list.lua} answers per key: kind, attempts, fingerprint, µs left, starts. */
    private static final int VALUES_PER_KEY = 5;

    private final RedisDedupStore store;
    private final RedisConnection connection;
    private final RedisKeys keys;
    private final Failures failures;
    private final long waitNanos;

    RedisListing(RedisDedupStore store, RedisConnection connection, RedisKeys keys, Failures failures, long waitNanos) {
        this.store = store;
        this.connection = connection;
        this.keys = keys;
        this.failures = failures;
        this.waitNanos = waitNanos;
    }

    KeyPage list(String namespace, KeyFilter filter, String cursor, int limit) {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(filter, "filter");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        String operation = "listing keys of namespace '" + abbreviate(namespace) + "' (SCAN)";
        byte[] namespacePrefix = keys.namespacePrefix(namespace);
        Position at = cursor == null ? start(operation) : Position.parse(cursor);
        List<ListedKey> page = new ArrayList<>();
        if (!at.leftOver().isEmpty()) {
            List<byte[]> leftOver = at.leftOver();
            int take = Math.min(limit, leftOver.size());
            List<byte[]> redisKeys = new ArrayList<>(take);
            for (byte[] id : leftOver.subList(0, take)) {
                redisKeys.add(RedisKeys.concat(namespacePrefix, id));
            }
            page.addAll(read(namespace, namespacePrefix, filter, redisKeys, at.leftOverPacked(), true, operation));
            at = at.carrying(leftOver.subList(take, leftOver.size()), at.leftOverPacked());
            if (!at.leftOver().isEmpty()) {
                return new KeyPage(page, at.encode());
            }
        }
        byte[] idPrefix = RedisKeys.utf8(filter.prefix());
        byte[] pattern = RedisKeys.startingWith(RedisKeys.concat(namespacePrefix, idPrefix));
        byte[] bucketPattern = keys.bucketPattern(namespace);
        long deadline = System.nanoTime() + CALL_BUDGET.toNanos();
        int count = Math.max(LIST_SCAN_MIN, Math.min(limit, LIST_SCAN_MAX));
        while (page.size() < limit && !at.done() && System.nanoTime() - deadline < 0) {
            KeyScanCursor<byte[]> batch = scan(at, at.packed() ? bucketPattern : pattern, count, operation);
            Position next = after(at, batch, operation);
            List<byte[]> found = at.packed()
                    ? fieldsOf(namespace, namespacePrefix, idPrefix, batch.getKeys(), operation) : batch.getKeys();
            List<ListedKey> listed = read(namespace, namespacePrefix, filter, found, at.packed(), true, operation);
            int room = limit - page.size();
            if (listed.size() > room) {
                page.addAll(listed.subList(0, room));
                List<byte[]> rest = new ArrayList<>();
                for (ListedKey k : listed.subList(room, listed.size())) {
                    rest.add(RedisKeys.utf8(k.key().id()));
                }
                return new KeyPage(page, next.carrying(rest, at.packed()).encode());
            }
            page.addAll(listed);
            at = next;
            // The next count aims at the room left, at the density the last batch showed.
            int left = limit - page.size();
            count = found.isEmpty() ? Math.min(count * 4, LIST_SCAN_MAX)
                    : (int) Math.max(LIST_SCAN_MIN, Math.min(LIST_SCAN_MAX, (long) left * count / found.size()));
        }
        return new KeyPage(page, at.done() ? null : at.encode());
    }

    PurgeBatch purge(String namespace, Instant expiringBefore, String cursor, int limit) {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(expiringBefore, "expiringBefore");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        if (!expiringBefore.isAfter(Instant.now())) {
            return new PurgeBatch(0, null);
        }
        String operation = "purging completed keys of namespace '" + abbreviate(namespace) + "' (SCAN)";
        byte[] namespacePrefix = keys.namespacePrefix(namespace);
        Position at = cursor == null ? start(operation) : Position.parse(cursor);
        if (!at.leftOver().isEmpty()) {
            throw new IllegalArgumentException("Not a cursor of a purge: " + abbreviate(cursor));
        }
        byte[] pattern = RedisKeys.startingWith(namespacePrefix);
        byte[] bucketPattern = keys.bucketPattern(namespace);
        long deadline = System.nanoTime() + CALL_BUDGET.toNanos();
        long deleted = 0;
        while (deleted < limit && !at.done() && System.nanoTime() - deadline < 0) {
            KeyScanCursor<byte[]> batch = scan(at, at.packed() ? bucketPattern : pattern, PURGE_SCAN, operation);
            Position next = after(at, batch, operation);
            // The time is taken before the read: a key found to end before it plus withinMillis has a PTTL below
            // withinMillis, which purge.lua tests again later, when the PTTL is lower still.
            Instant before = Instant.now();
            long withinMillis = Duration.between(before, expiringBefore).toMillis();
            List<byte[]> found = at.packed()
                    ? fieldsOf(namespace, namespacePrefix, new byte[0], batch.getKeys(), operation) : batch.getKeys();
            List<ListedKey> completed = read(namespace, namespacePrefix, new KeyFilter(StoredKey.State.COMPLETED, ""),
                    found, at.packed(), false, operation);
            List<byte[]> candidates = new ArrayList<>();
            for (ListedKey k : completed) {
                if (k.stored().expiresAt().isBefore(before.plusMillis(withinMillis))) {
                    candidates.add(keys.encode(k.key()));
                }
            }
            long room = limit - deleted;
            deleted += delete(namespacePrefix, candidates.subList(0, (int) Math.min(room, candidates.size())),
                    withinMillis, operation);
            if (candidates.size() > room) {
                // The rest of this batch is found again by the next call, which scans it anew.
                return new PurgeBatch(deleted, at.encode());
            }
            at = next;
        }
        return new PurgeBatch(deleted, at.done() ? null : at.encode());
    }

    /** Where a listing starts: the beginning of the database, or of the first master's. */
    private Position start(String operation) {
        return first("0", operation);
    }

    /** The start of a phase's scan ({@code "0"} or {@code "p0"}): the beginning of the database, or of the first master's. */
    private Position first(String scan, String operation) {
        if (!connection.cluster()) {
            return new Position(null, scan, List.of(), false);
        }
        List<String> masters = connection.masters();
        if (masters.isEmpty()) {
            throw failures.failed(operation, "the cluster client knows no master node", true);
        }
        return new Position(masters.get(0), scan, List.of(), false);
    }

    /** Where the scan goes on after {@code batch}: further on the same node, the next master, or nowhere. */
    private Position after(Position at, KeyScanCursor<byte[]> batch, String operation) {
        String phase = at.packed() ? "p" : "";
        if (!batch.isFinished()) {
            return new Position(at.node(), phase + batch.getCursor(), List.of(), false);
        }
        if (at.node() != null) {
            List<String> masters = connection.masters();
            int index = masters.indexOf(at.node());
            if (index < 0) {
                throw changedMasters(at.node(), operation);
            }
            if (index + 1 < masters.size()) {
                return new Position(masters.get(index + 1), phase + "0", List.of(), false);
            }
        }
        // The message keys are done: the buckets of packed completions come next, and after them nothing.
        return at.packed() ? Position.PACKED_DONE : first("p0", operation);
    }

    /**
     * The message keys of the packed completions held by those of {@code found} that are buckets of the namespace,
     * whose ID starts with {@code idPrefix}; expired ones among them, which {@code list.lua} reads as absent.
     */
    private List<byte[]> fieldsOf(String namespace, byte[] namespacePrefix, byte[] idPrefix, List<byte[]> found,
            String operation) {
        List<CompletableFuture<List<byte[]>>> fields = new ArrayList<>();
        for (byte[] key : found) {
            if (keys.isBucketOf(key, namespace)) {
                fields.add(connection.commands().hkeys(key).toCompletableFuture());
            }
        }
        long deadline = System.nanoTime() + waitNanos;
        List<byte[]> out = new ArrayList<>();
        for (CompletableFuture<List<byte[]>> bucket : fields) {
            for (byte[] id : store.await(bucket, operation, deadline)) {
                if (startsWith(id, idPrefix)) {
                    out.add(RedisKeys.concat(namespacePrefix, id));
                }
            }
        }
        return out;
    }

    private KeyScanCursor<byte[]> scan(Position at, byte[] pattern, int count, String operation) {
        if (at.node() != null && !connection.masters().contains(at.node())) {
            throw changedMasters(at.node(), operation);
        }
        ScanArgs args = ScanArgs.Builder.matches(pattern).limit(count);
        return store.await(connection.node(at.node()).scan(ScanCursor.of(at.scanCursor()), args).toCompletableFuture(),
                operation, System.nanoTime() + waitNanos);
    }

    private StoreException changedMasters(String node, String operation) {
        return failures.failed(operation, "node " + node + " is no longer a master of the cluster (a failover or"
                + " resharding happened during the listing); start it again", false);
    }

    /**
     * Reads {@code found}, keys of the namespace, with {@code list.lua}, one call per
     * batch or hash slot, all sent at once; answers the keys a claim would see now that pass {@code filter}, in
     * the order given.
     *
     * @param strict whether a value that is not an Idem record fails the call (a listing) or is passed over (a purge)
     */
    private List<ListedKey> read(String namespace, byte[] namespacePrefix, KeyFilter filter, List<byte[]> found,
            boolean packedOnly, boolean strict, String operation) {
        if (found.isEmpty()) {
            return List.of();
        }
        byte[][] redisKeys = found.toArray(new byte[0][]);
        for (byte[] key : redisKeys) {
            if (!startsWith(key, namespacePrefix)) {
                throw failures.unexpectedReply(operation, "a key outside the namespace: "
                        + new String(key, StandardCharsets.UTF_8));
            }
        }
        int[][] groups = connection.cluster() ? RedisDedupStore.bySlot(redisKeys) : RedisDedupStore.oneGroup(redisKeys);
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>(groups.length);
        byte[][] ids = idsOf(namespacePrefix, redisKeys);
        for (int[] group : groups) {
            byte[][] args = new byte[group.length + 1][];
            args[0] = packedOnly ? PACKED_ONLY : STRING_FIRST;
            for (int j = 0; j < group.length; j++) {
                args[1 + j] = store.fieldOf(ids[group[j]]);
            }
            replies.add(LIST.run(connection.commands(), ScriptOutputType.MULTI,
                    store.withFamilies(group, redisKeys, ids), args));
        }
        long deadline = System.nanoTime() + waitNanos;
        Instant now = null;
        ListedKey[] seen = new ListedKey[redisKeys.length];
        for (int g = 0; g < groups.length; g++) {
            List<Object> reply = store.await(replies.get(g), operation, deadline);
            now = now == null ? Instant.now() : now;
            decode(namespace, namespacePrefix, groups[g], redisKeys, reply, now, seen, strict, operation);
        }
        List<ListedKey> out = new ArrayList<>(seen.length);
        for (ListedKey k : seen) {
            if (k != null && filter.matches(k.key().id(), k.stored())) {
                out.add(k);
            }
        }
        return out;
    }

    private void decode(String namespace, byte[] namespacePrefix, int[] group, byte[][] redisKeys, List<Object> reply,
            Instant now, ListedKey[] seen, boolean strict, String operation) {
        if (reply == null || reply.size() != VALUES_PER_KEY * group.length) {
            throw failures.unexpectedReply(operation, reply == null ? null : reply.size() + " values for "
                    + group.length + " keys");
        }
        for (int j = 0; j < group.length; j++) {
            List<Object> values = reply.subList(VALUES_PER_KEY * j, VALUES_PER_KEY * j + VALUES_PER_KEY);
            if (!(values.get(0) instanceof Long kind) || !(values.get(1) instanceof Long attempts)
                    || !(values.get(2) instanceof byte[] fingerprint) || !(values.get(3) instanceof Long left)
                    || !(values.get(4) instanceof Long starts)) {
                throw failures.unexpectedReply(operation, values);
            }
            if (kind == NOT_A_RECORD && strict) {
                throw failures.notARecord(operation + ": key " + new String(redisKeys[group[j]], StandardCharsets.UTF_8));
            }
            if (kind != CLAIMED && kind != COMPLETED) {
                continue;
            }
            if (attempts < 1 || attempts > Integer.MAX_VALUE || starts < 0 || starts > Integer.MAX_VALUE) {
                throw failures.unexpectedReply(operation, values);
            }
            String id = RedisKeys.text(redisKeys[group[j]], namespacePrefix.length);
            String given;
            try {
                given = RedisRecords.fingerprint(fingerprint);
            } catch (IllegalArgumentException e) {
                throw failures.unexpectedReply(operation, values);
            }
            // A completed key without TTL (only a person can have removed it) is never forgotten.
            Instant expiresAt = left < 0 && kind == COMPLETED ? Instant.MAX : now.plus(left, ChronoUnit.MICROS);
            seen[group[j]] = new ListedKey(new StoreKey(namespace, id), new StoredKey(
                    kind == CLAIMED ? StoredKey.State.CLAIMED : StoredKey.State.COMPLETED, attempts.intValue(),
                    given, expiresAt, starts.intValue()));
        }
    }

    /** Deletes those of {@code candidates} still completed within the time, with {@code purge.lua}; answers how many. */
    private long delete(byte[] namespacePrefix, List<byte[]> candidates, long withinMillis, String operation) {
        if (candidates.isEmpty()) {
            return 0;
        }
        byte[][] redisKeys = candidates.toArray(new byte[0][]);
        byte[][] ids = idsOf(namespacePrefix, redisKeys);
        int[][] groups = connection.cluster() ? RedisDedupStore.bySlot(redisKeys) : RedisDedupStore.oneGroup(redisKeys);
        List<CompletableFuture<Long>> replies = new ArrayList<>(groups.length);
        for (int[] group : groups) {
            // Each key's steps and reply go with it (purge.lua's second and last third of KEYS): on its slot, or,
            // where a prefix opening with empty braces put them elsewhere (no step or reply could be written then),
            // the key itself again.
            // And its family of buckets, the last quarter, with its field among the arguments.
            byte[][] all = Arrays.copyOf(RedisDedupStore.keysOf(group, redisKeys), 4 * group.length);
            byte[][] args = new byte[1 + group.length][];
            args[0] = RedisDedupStore.ascii(withinMillis);
            for (int j = 0; j < group.length; j++) {
                byte[] key = all[j];
                byte[] id = ids[group[j]];
                all[group.length + j] = !connection.cluster() || keys.stepsOnSlot(key) ? keys.stepsOf(key) : key;
                all[2 * group.length + j] = !connection.cluster() || keys.replyOnSlot(key) ? keys.replyOf(key) : key;
                all[3 * group.length + j] = store.familyOf(key, id);
                args[1 + j] = store.fieldOf(id);
            }
            replies.add(PURGE.run(connection.commands(), ScriptOutputType.INTEGER, all, args));
        }
        long deadline = System.nanoTime() + waitNanos;
        long deleted = 0;
        for (CompletableFuture<Long> reply : replies) {
            Object count = store.await(reply, operation, deadline);
            if (!(count instanceof Long n) || n < 0) {
                throw failures.unexpectedReply(operation, count);
            }
            deleted += n;
        }
        return deleted;
    }

    /** The IDs of {@code redisKeys}, message keys of the namespace whose keys start with {@code namespacePrefix}. */
    private static byte[][] idsOf(byte[] namespacePrefix, byte[][] redisKeys) {
        byte[][] ids = new byte[redisKeys.length][];
        for (int i = 0; i < redisKeys.length; i++) {
            ids[i] = Arrays.copyOfRange(redisKeys[i], namespacePrefix.length, redisKeys[i].length);
        }
        return ids;
    }

    private static boolean startsWith(byte[] key, byte[] prefix) {
        return key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }


    private static String abbreviate(String text) {
        return text.length() <= 64 ? text : text.substring(0, 61) + "...";
    }

    /**
     * Where a listing or purge is: the master scanned ({@code null} standalone), the {@code SCAN} cursor on it,
     * and the IDs (UTF-8) a listing found but had no room for. Written as
     * {@code [<node>/][p]<scan>[,*][,<base64url ID>...]}, or {@code [p]end} once scanning is over and only IDs are
     * left, where {@code p} marks the second phase, the buckets of packed completions, and {@code *} IDs it found.
     */
    record Position(String node, String scan, List<byte[]> leftOver, boolean leftOverPacked) {

        /** Done: IDs carried from the second phase are read as packed completions only. */
        static final Position PACKED_DONE = new Position(null, "pend", List.of(), false);

        private static final Pattern NODE = Pattern.compile("[0-9A-Za-z]{1,64}");
        private static final Pattern SCAN = Pattern.compile("p?([0-9]{1,20}|end)");

        boolean done() {
            return scan.endsWith("end") && leftOver.isEmpty();
        }

        /** Whether this is the second phase, which scans buckets of packed completions. */
        boolean packed() {
            return scan.startsWith("p");
        }

        /** The {@code SCAN} cursor, without the phase. */
        String scanCursor() {
            return packed() ? scan.substring(1) : scan;
        }

        /** This position with {@code ids} left over, found by the second phase ({@code packed}) or the first. */
        Position carrying(List<byte[]> ids, boolean packed) {
            return new Position(node, scan, List.copyOf(ids), packed && !ids.isEmpty());
        }

        String encode() {
            StringBuilder out = new StringBuilder();
            if (node != null) {
                out.append(node).append('/');
            }
            out.append(scan);
            if (leftOverPacked) {
                out.append(",*");
            }
            for (byte[] id : leftOver) {
                out.append(',').append(Base64.getUrlEncoder().withoutPadding().encodeToString(id));
            }
            return out.toString();
        }

        static Position parse(String cursor) {
            try {
                String[] parts = cursor.split(",", -1);
                String head = parts[0];
                int slash = head.indexOf('/');
                String node = slash < 0 ? null : head.substring(0, slash);
                String scan = head.substring(slash + 1);
                if ((node != null && !NODE.matcher(node).matches()) || !SCAN.matcher(scan).matches()) {
                    throw new IllegalArgumentException();
                }
                boolean packed = parts.length > 2 && parts[1].equals("*");
                List<byte[]> ids = new ArrayList<>();
                for (int i = packed ? 2 : 1; i < parts.length; i++) {
                    ids.add(Base64.getUrlDecoder().decode(parts[i]));
                }
                return new Position(scan.endsWith("end") ? null : node, scan, List.copyOf(ids), packed);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("Not a cursor of the Redis store's listing: "
                        + (cursor.length() <= 64 ? cursor : cursor.substring(0, 61) + "..."), e);
            }
        }
    }
}
