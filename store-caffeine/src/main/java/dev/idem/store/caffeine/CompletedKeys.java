package dev.idem.store.caffeine;

import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.StampedLock;
import java.util.function.LongSupplier;
import java.util.function.ToIntFunction;

/**
 * The completed tier of a {@link CaffeineDedupStore}: completed keys, at most {@code maximumSize} of them,
 * forgotten in the order they were completed, each also forgotten at the end of its retention.
 *
 * <p><b>Why oldest-completed first, and not a Caffeine bounded cache.</b> A redelivery comes soon after the
 * first delivery, so the key to give up at the bound is the one completed longest ago. Caffeine's W-TinyLFU
 * does the opposite for keys that are each written once: a new entry competes for admission with the oldest one
 * and, with the same frequency, loses. Measured with Caffeine 3.2 and a bound of 100,000, after 1,000,000
 * completions 83 % of the keys kept were from the first fifth and 299 of the last 10,000 were kept; a full
 * store ran the handler of a message redelivered 100 messages later again. The upkeep of its frequency sketch
 * and eviction was also most of the store's CPU.
 *
 * <p><b>Why no object per key.</b> Keys live for seconds, so a young collection finds every one of them
 * alive and copies it; with a map of completion objects (seven objects, some 280 bytes a key) a pipeline
 * spent about 30 % of its time in GC. Here a key is a few primitives in arrays that live as long as the
 * store: the collector has nothing per key to copy or trace, and a {@link CaffeineDedupStore.Done} is only
 * built when a completion is read.
 *
 * <p><b>Structure.</b> A ring of entries in completion order, from {@code head} (oldest) to {@code tail}, in
 * one {@code long[]} of {@value #WORDS} words per entry: token, end of retention, attempts and namespace
 * (an index into a table of the distinct namespaces, which are few), hash and where its bytes start in the
 * arena, and the shape of its id and fingerprint with a live flag. The arena is a ring of bytes filled in the
 * same order, so freeing the ring's head frees the arena's head: an id as Latin-1 (one byte a char) when all its
 * chars are below 256, else as UTF-16 (two bytes a char), either way exactly the id's chars, then the
 * fingerprint, as its 32 raw bytes when it is what the runtime sends (unpadded base64url of a SHA-256 that
 * re-encodes to itself), else as its chars, or nothing when it is {@code null}. An open-addressing index
 * ({@code long}s of hash and ring slot, linear probing, backward-shift deletion, so no tombstones) finds a
 * key's entry; a match compares the whole key, never only its hash, since a false match would drop a new
 * message as a duplicate. The index has twice as many slots as the ring, so it is at most half full.
 *
 * <p>Per key: 40 bytes of ring and 16 of index per ring slot, and the arena's bytes (68 for a 36-char ASCII
 * id and a SHA-256 fingerprint), plus up to half as much again of arena not yet filled; no object. Measured
 * with 1,000,000 such keys (heap after a full GC): 149 bytes a key, against 281 bytes and seven objects a key
 * (map node, completion, key, two strings and their byte arrays) for the map of completions this replaced.
 * The ring and index grow by doubling from {@code initialCapacity} (at most to the power of two above five
 * fourths of {@code maximumSize}; a full ring that large is at least a fifth stale and is compacted instead),
 * the arena by half its size when an entry does not fit; none shrinks before {@link #clear}.
 *
 * <p><b>Forgetting.</b> {@link #put} first marks any older entry of the key stale, forgets the head while
 * {@code maximumSize} keys are held, appends, then forgets from the head while it is stale or its retention has
 * ended. Reads answer {@code null} for a completion whose retention has ended, whether or not it was removed
 * yet. With one retention for all keys the ring's order is also their order of expiry; a key with a shorter
 * retention than the keys before it reads as absent once it expires and leaves memory when it reaches the head.
 * A key completed again, deleted or purged leaves a stale entry, which only holds its slot and bytes: it is
 * never in the index, so it can never forget the key's newer completion. When stale entries make the ring longer
 * than twice the keys held (and than {@value #MIN_COMPACT}), or a quarter of a full ring or arena, the ring and
 * arena are compacted in one pass, so their length stays within a constant factor of the keys held. A key
 * whose id and fingerprint together exceed {@value #MAX_ENTRY_CHARS} chars (the runtime's ids are at most
 * {@value StoreKey#MAX_ID_BYTES} bytes) is not remembered, as if forgotten at once by the bound.
 *
 * <p><b>Replies.</b> A completion {@linkplain #put(CaffeineDedupStore.Done, long, boolean) put} with a reply (kept by
 * the store, beside this tier) carries a flag in its shape; whenever such a completion leaves the index, however it
 * does (the bound, its retention, a newer completion of its key, a removal), the {@link Forgotten} listener is told its
 * key and token, under the write lock, so that the reply leaves memory with its completion. Completions without a
 * reply cost nothing more: no key is rebuilt for them.
 *
 * <p><b>Locks.</b> Every write holds the write lock of one {@link StampedLock}, for the writes alone: {@link #put}
 * encodes the entry's bytes and reads the index's lines it is about to write (taking their cache misses) before it
 * takes the lock, which every completion needs and every read that meets it waits out; a batch of claims or
 * completions reads all its keys' lines first ({@link #warmLookups}, {@link #warmPuts}), so that their misses overlap
 * instead of coming one after the other.
 * {@link #get} reads optimistically, without a lock, spinning a few microseconds at most while a write holds it,
 * then under the read lock; that read tolerates anything a concurrent write leaves half done (every array is read
 * once from one snapshot of references, every position derived from an entry is masked or checked against the array
 * it indexes, every loop is bounded by the key or the index) and its answer is used only once the stamp validates.
 * {@link #put} is called by the store inside a key's lock of its claim map; nothing here calls back into the claim
 * map, so the order is always claim map, then this lock, and cannot cycle. Thread-safe.
 */
final class CompletedKeys {

    /** The ring never grows past this many entries: then each completion forgets the oldest one. */
    static final int MAX_RING = 1 << 28;
    /** The arena never grows past this many bytes: then each completion forgets the oldest ones. */
    static final int MAX_ARENA = 1 << 30;
    /** The longest id and fingerprint, together, that a completion may have to be remembered. */
    static final int MAX_ENTRY_CHARS = 1 << 19;
    private static final int MIN_COMPACT = 1024;
    private static final int MIN_RING = 16;
    /** Bytes of arena set aside per initial ring slot: about an id and a SHA-256 fingerprint. */
    private static final int BYTES_PER_KEY = 64;
    /**
     * How many times {@link #get} tries to read without the lock, or spins while a write holds it, before it reads
     * under the lock.
     */
    private static final int OPTIMISTIC_SPINS = 64;
    /** How many completions an iteration reads under the lock at a time. */
    static final int CHUNK = 1024;

    private static final int WORDS = 5;
    private static final int TOKEN = 0;
    private static final int EXPIRES = 1;
    /** Attempts in the high half, namespace index in the low half. */
    private static final int ATTEMPTS_NS = 2;
    /** Hash in the high half, the bytes' start in the arena in the low half. */
    private static final int HASH_START = 3;
    /** The id's shape in the high half, the fingerprint's (with the live flag) in the low half. */
    private static final int SHAPE = 4;

    /** In a chars shape: the chars are two bytes each; else one. */
    private static final int UTF16 = 1 << 31;
    /** In a chars shape: the byte length. */
    private static final int LENGTH = ~UTF16;
    private static final int FP_KIND_SHIFT = 30;
    private static final int FP_NULL = 0;
    private static final int FP_SHA256 = 1;
    private static final int FP_LATIN1 = 2;
    private static final int FP_UTF16 = 3;
    private static final int LIVE = 1 << 29;
    /** In the fingerprint's shape: the completion came with a reply, which the listener hears of when it leaves. */
    private static final int REPLIED = 1 << 28;
    private static final int FP_LENGTH = REPLIED - 1;
    private static final int SHA256_BYTES = 32;
    private static final int SHA256_CHARS = 43;
    private static final long HIGH = 0xFFFF_FFFF_0000_0000L;
    private static final long LOW = 0xFFFF_FFFFL;

    private static final long UNLIKELY = 0x9E37_79B9_7F4A_7C15L;
    /** See {@link #keep}. */
    @SuppressWarnings("unused")
    private static long kept;
    private static final byte[] BASE64URL = new byte[128];
    private static final Base64.Encoder SHA256_ENCODER = Base64.getUrlEncoder().withoutPadding();

    static {
        Arrays.fill(BASE64URL, (byte) -1);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for (int i = 0; i < alphabet.length(); i++) {
            BASE64URL[alphabet.charAt(i)] = (byte) i;
        }
    }

    /** The arrays, replaced together when one grows, so that a lock-free read sees lengths that agree. */
    private static final class Tables {
        final long[] entries;
        final int mask;
        final long[] index;
        final byte[] arena;

        Tables(long[] entries, long[] index, byte[] arena) {
            this.entries = entries;
            this.mask = entries.length / WORDS - 1;
            this.index = index;
            this.arena = arena;
        }
    }

    /**
     * Told of each completion put with a reply as it leaves the index; called under the write lock, so it must not
     * call back into this tier.
     */
    @FunctionalInterface
    interface Forgotten {
        void replyForgotten(StoreKey key, long token);
    }

    private static final Forgotten NOBODY = (key, token) -> { };

    private final long maximumSize;
    private final LongSupplier ticker;
    private final ToIntFunction<String> idHash;
    private final Forgotten forgotten;
    private final int initialRing;
    private final int ringLimit;
    private final StampedLock lock = new StampedLock();

    // Guarded by the write lock; read without it only by get, which validates.
    private Tables tables;
    /** Ring positions: they only grow, so an iteration's cursor stays meaningful across writes. */
    private long head;
    private long tail;
    private int arenaHead;
    private int arenaUsed;
    private int live;
    /** Namespace to index, read by get without the lock; an index is reused only once no entry holds it. */
    private final ConcurrentHashMap<String, Integer> namespaceIds = new ConcurrentHashMap<>();
    private String[] namespaces = new String[4];
    /** How many ring entries, stale ones included, hold each namespace. */
    private int[] namespaceRefs = new int[4];

    CompletedKeys(long maximumSize, int initialCapacity, LongSupplier ticker) {
        this(maximumSize, initialCapacity, ticker, String::hashCode, NOBODY);
    }

    /** With a listener told of each completion with a reply that leaves. */
    CompletedKeys(long maximumSize, int initialCapacity, LongSupplier ticker, Forgotten forgotten) {
        this(maximumSize, initialCapacity, ticker, String::hashCode, forgotten);
    }

    /** With the hash of ids given, for tests that make keys collide. */
    CompletedKeys(long maximumSize, int initialCapacity, LongSupplier ticker, ToIntFunction<String> idHash) {
        this(maximumSize, initialCapacity, ticker, idHash, NOBODY);
    }

    private CompletedKeys(long maximumSize, int initialCapacity, LongSupplier ticker, ToIntFunction<String> idHash,
            Forgotten forgotten) {
        this.maximumSize = maximumSize;
        this.ticker = ticker;
        this.idHash = idHash;
        this.forgotten = forgotten;
        long bound = Math.min(maximumSize, MAX_RING);
        this.ringLimit = (int) Math.min(MAX_RING, powerOfTwoAtLeast(Math.max(MIN_RING, bound + (bound >> 2) + 1)));
        this.initialRing = (int) Math.min(ringLimit,
                powerOfTwoAtLeast(Math.max(MIN_RING, Math.min(initialCapacity, bound))));
        this.tables = emptyTables();
    }

    /** The key's completion if its retention has not ended at {@code now}, else {@code null}. */
    CaffeineDedupStore.Done get(StoreKey key, long now) {
        // A write holds the lock for about a microsecond: a read that met one spins until it is released and tries
        // again, a few times and for a few microseconds at most, before it queues for the read lock, where it would
        // park (and block the next writer, which would park too, until the first writer unparked it).
        for (int attempt = 0; attempt < OPTIMISTIC_SPINS; attempt++) {
            long stamp = lock.tryOptimisticRead();
            if (stamp != 0) {
                CaffeineDedupStore.Done done = find(key, now);
                if (lock.validate(stamp)) {
                    return done;
                }
            }
            Thread.onSpinWait();
        }
        long stamp = lock.readLock();
        try {
            return find(key, now);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@link #get(StoreKey, long)} at the ticker's reading. */
    CaffeineDedupStore.Done get(StoreKey key) {
        return get(key, ticker.getAsLong());
    }

    /** Writes {@code done} for its key, then forgets the oldest completions past the bound or their retention. */
    void put(CaffeineDedupStore.Done done, long now) {
        put(done, now, false);
    }

    /**
     * {@link #put(CaffeineDedupStore.Done, long)}; with {@code replied}, the listener hears of the completion when it
     * leaves. A completion too long to be remembered leaves at once, and the listener hears of it before this returns.
     */
    void put(CaffeineDedupStore.Done done, long now, boolean replied) {
        StoreKey key = done.key;
        String id = key.id();
        String fingerprint = done.fingerprint;
        boolean remembered = (long) id.length() + (fingerprint == null ? 0 : fingerprint.length()) <= MAX_ENTRY_CHARS;
        // Before the lock: the entry's bytes, and a read of the index's lines the write will touch (when its
        // namespace is known), so that the cache misses of a large index are mostly taken outside the lock.
        int idShape = 0;
        int fpShape = 0;
        byte[] bytes = null;
        if (remembered) {
            idShape = charsShape(id);
            fpShape = fingerprintShape(fingerprint);
            bytes = encode(id, idShape, fingerprint, fpShape);
        }
        Integer known = namespaceIds.get(key.namespace());
        if (known != null) {
            warm(hash(known, id));
        }
        long stamp = lock.writeLock();
        try {
            Tables t = tables;
            int at = indexOf(t, key);
            if (at >= 0) {
                unlinkAt(t, at);
            }
            if (remembered) {
                while (live >= maximumSize) {
                    popHead();
                }
                int ns = acquireNamespace(key.namespace());
                makeRoom(bytes.length);
                append(done, ns, hash(ns, id), idShape, replied ? fpShape | REPLIED : fpShape, bytes);
            } else if (replied) {
                forgotten.replyForgotten(key, done.token);
            }
            forgetOldest(now);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Reads, without the lock, the index's lines that looking up each of {@code keys} will read, only to bring them
     * into this core's cache, all at once, so that their misses overlap; nothing the tier does depends on the values.
     */
    void warmLookups(List<StoreKey> keys) {
        Tables t = tables;
        long[] index = t.index;
        int mask = index.length - 1;
        long sink = 0;
        for (int i = 0, n = keys.size(); i < n; i++) {
            StoreKey key = keys.get(i);
            Integer known = namespaceIds.get(key.namespace());
            if (known != null) {
                sink += index[hash(known, key.id()) & mask];
            }
        }
        keep(sink);
    }

    /**
     * {@link #warmLookups} for completions about to be put, and the index's lines of the entries a full ring forgets
     * for them.
     */
    void warmPuts(List<StoreKey> keys) {
        warmLookups(keys);
        Tables t = tables;
        long[] index = t.index;
        int mask = index.length - 1;
        long sink = 0;
        if (live >= maximumSize) {
            long first = head;
            for (int i = 0, n = keys.size(); i < n; i++) {
                long entry = t.entries[((int) (first + i) & t.mask) * WORDS + HASH_START];
                sink += index[(int) (entry >>> 32) & mask];
            }
        }
        keep(sink);
    }

    /**
     * Reads, without the lock, the index's line for {@code hash} and the one of the entry a full ring forgets next,
     * only to bring them into this core's cache; nothing the tier does depends on the values read.
     */
    private void warm(int hash) {
        Tables t = tables;
        long[] index = t.index;
        int mask = index.length - 1;
        long sink = index[hash & mask];
        if (live >= maximumSize) {
            long entry = t.entries[((int) head & t.mask) * WORDS + HASH_START];
            sink += index[(int) (entry >>> 32) & mask];
        }
        keep(sink);
    }

    /**
     * Uses a value read only to warm the cache, so that the compiler keeps the read: it is compared with a constant
     * it is practically never equal to, and written to a field no one reads in that case alone, so that the shared
     * state's cache lines are not written.
     */
    private static void keep(long value) {
        if (value == UNLIKELY) {
            kept = value;
        }
    }

    /** Removes the key's completion, live or not, and answers it, or {@code null} if there was none. */
    CaffeineDedupStore.Done remove(StoreKey key) {
        long stamp = lock.writeLock();
        try {
            Tables t = tables;
            int at = indexOf(t, key);
            if (at < 0) {
                return null;
            }
            CaffeineDedupStore.Done done = materialize(t, slotAt(t, at), key);
            unlinkAt(t, at);
            return done;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Removes the key's completion only if it is still the completion of {@code token}. */
    boolean remove(StoreKey key, long token) {
        long stamp = lock.writeLock();
        try {
            Tables t = tables;
            int at = indexOf(t, key);
            if (at < 0 || t.entries[slotAt(t, at) * WORDS + TOKEN] != token) {
                return false;
            }
            unlinkAt(t, at);
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Every completion held, including any whose retention ended and which is not removed yet, built a chunk at
     * a time under the lock and in completion order. Weakly consistent: a completion held throughout is seen
     * at least once (twice if a compaction moved it past the iteration meanwhile), one written meanwhile may or
     * may not be; the lock is never held while the caller runs.
     */
    Iterable<CaffeineDedupStore.Done> all() {
        return Chunks::new;
    }

    /** How many completions are live at {@code now}, counted a chunk at a time; weakly consistent as {@link #all}. */
    long countLive(long now) {
        long count = 0;
        long cursor = Long.MIN_VALUE;
        while (true) {
            long stamp = lock.readLock();
            try {
                Tables t = tables;
                long r = Math.max(cursor, head);
                long end = Math.min(tail, r + CHUNK);
                for (; r < end; r++) {
                    int at = ((int) r & t.mask) * WORDS;
                    if (isLive(t.entries[at + SHAPE]) && t.entries[at + EXPIRES] - now > 0) {
                        count++;
                    }
                }
                if (r >= tail) {
                    return count;
                }
                cursor = r;
            } finally {
                lock.unlockRead(stamp);
            }
        }
    }

    /** How many completions are held, including any whose retention ended and which is not removed yet. */
    long size() {
        long stamp = lock.readLock();
        try {
            return live;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Removes every completion whose retention has ended, wherever it is in the ring. */
    void removeExpired() {
        long now = ticker.getAsLong();
        long stamp = lock.writeLock();
        try {
            Tables t = tables;
            for (long r = head; r < tail; r++) {
                int slot = (int) r & t.mask;
                int at = slot * WORDS;
                if (isLive(t.entries[at + SHAPE]) && t.entries[at + EXPIRES] - now <= 0) {
                    unlinkAt(t, indexOfSlot(t, (int) (t.entries[at + HASH_START] >>> 32), slot));
                }
            }
            forgetOldest(now);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    void clear() {
        long stamp = lock.writeLock();
        try {
            tables = emptyTables();
            // Positions keep growing so that an iteration in progress simply finds nothing more.
            head = tail;
            arenaHead = 0;
            arenaUsed = 0;
            live = 0;
            namespaceIds.clear();
            namespaces = new String[4];
            namespaceRefs = new int[4];
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** How many entries the ring holds, stale ones included; for tests. */
    long ringLength() {
        long stamp = lock.readLock();
        try {
            return tail - head;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** How many bytes the arena holds, stale entries' included; for tests. */
    long arenaLength() {
        long stamp = lock.readLock();
        try {
            return arenaUsed;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    // ---------------------------------------------------------------- reads

    /**
     * The key's live completion at {@code now}, or {@code null}. Runs without the lock: it must neither throw
     * nor loop forever on whatever a concurrent write left, and its answer means something only if validated.
     */
    private CaffeineDedupStore.Done find(StoreKey key, long now) {
        Tables t = tables;
        int at = indexOf(t, key);
        if (at < 0) {
            return null;
        }
        int slot = slotAt(t, at);
        long expiresAt = t.entries[slot * WORDS + EXPIRES];
        return expiresAt - now > 0 ? materialize(t, slot, key) : null;
    }

    /** The key's position in the index, or -1. */
    private int indexOf(Tables t, StoreKey key) {
        Integer known = namespaceIds.get(key.namespace());
        if (known == null) {
            return -1;
        }
        int ns = known;
        String id = key.id();
        int hash = hash(ns, id);
        long[] index = t.index;
        long[] entries = t.entries;
        byte[] arena = t.arena;
        int mask = index.length - 1;
        int i = hash & mask;
        for (int probes = 0; probes <= mask; probes++) {
            long found = index[i];
            if (found == 0) {
                return -1;
            }
            if ((int) (found >>> 32) == hash) {
                int e = (((int) found - 1) & t.mask) * WORDS;
                if ((int) entries[e + ATTEMPTS_NS] == ns
                        && sameChars(arena, (int) entries[e + HASH_START], (int) (entries[e + SHAPE] >>> 32), id)) {
                    return i;
                }
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    private static int slotAt(Tables t, int at) {
        return ((int) t.index[at] - 1) & t.mask;
    }

    /** The completion in {@code slot}, for {@code key} (the caller's, or rebuilt when {@code null}). */
    private CaffeineDedupStore.Done materialize(Tables t, int slot, StoreKey key) {
        long[] entries = t.entries;
        int e = slot * WORDS;
        long shape = entries[e + SHAPE];
        int idShape = (int) (shape >>> 32);
        int start = (int) entries[e + HASH_START];
        byte[] arena = t.arena;
        if (key == null) {
            key = new StoreKey(namespaces[(int) entries[e + ATTEMPTS_NS]],
                    readChars(arena, start, (idShape & UTF16) != 0, idShape & LENGTH));
        }
        int fpStart = arena.length == 0 ? 0 : (int) (((start & LOW) + (idShape & LENGTH)) % arena.length);
        return new CaffeineDedupStore.Done(key, entries[e + TOKEN], (int) (entries[e + ATTEMPTS_NS] >>> 32),
                readFingerprint(arena, fpStart, (int) shape), entries[e + EXPIRES]);
    }

    private final class Chunks implements Iterator<CaffeineDedupStore.Done> {
        private final List<CaffeineDedupStore.Done> chunk = new ArrayList<>();
        private long cursor = Long.MIN_VALUE;
        private int next;
        private boolean last;

        @Override
        public boolean hasNext() {
            while (next == chunk.size()) {
                if (last) {
                    return false;
                }
                fill();
            }
            return true;
        }

        @Override
        public CaffeineDedupStore.Done next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return chunk.get(next++);
        }

        private void fill() {
            chunk.clear();
            next = 0;
            long stamp = lock.readLock();
            try {
                Tables t = tables;
                long r = Math.max(cursor, head);
                for (; r < tail && chunk.size() < CHUNK; r++) {
                    int slot = (int) r & t.mask;
                    if (isLive(t.entries[slot * WORDS + SHAPE])) {
                        chunk.add(materialize(t, slot, null));
                    }
                }
                cursor = r;
                last = r >= tail;
            } finally {
                lock.unlockRead(stamp);
            }
        }
    }

    // ---------------------------------------------------------------- writes, under the write lock

    private void append(CaffeineDedupStore.Done done, int ns, int hash, int idShape, int fpShape, byte[] encoded) {
        Tables t = tables;
        byte[] arena = t.arena;
        int bytes = encoded.length;
        int start = wrap(arenaHead + arenaUsed, arena.length);
        int first = Math.min(bytes, arena.length - start);
        System.arraycopy(encoded, 0, arena, start, first);
        System.arraycopy(encoded, first, arena, 0, bytes - first);
        arenaUsed += bytes;
        int slot = (int) tail & t.mask;
        int e = slot * WORDS;
        long[] entries = t.entries;
        entries[e + TOKEN] = done.token;
        entries[e + EXPIRES] = done.expiresAt;
        entries[e + ATTEMPTS_NS] = ((long) done.attempts << 32) | (ns & LOW);
        entries[e + HASH_START] = ((long) hash << 32) | (start & LOW);
        entries[e + SHAPE] = ((long) idShape << 32) | ((fpShape | LIVE) & LOW);
        insert(t.index, hash, slot);
        tail++;
        live++;
    }

    /** Frees a ring slot and {@code bytes} of arena: compacts, grows, or at the limits forgets the oldest. */
    private void makeRoom(int bytes) {
        while (true) {
            Tables t = tables;
            long length = tail - head;
            boolean ringFull = length > t.mask;
            boolean arenaFull = (long) arenaUsed + bytes > t.arena.length;
            if (!ringFull && !arenaFull) {
                return;
            }
            long stale = length - live;
            if (stale > 0 && stale >= length >> 2) {
                compact();
            } else if (ringFull && t.mask + 1 < ringLimit) {
                growRing();
            } else if (!ringFull && t.arena.length < MAX_ARENA) {
                growArena(bytes);
            } else if (stale > 0 && stale >= length >> 4) {
                // Past the ring's limit at least a fifth is stale (the limit is 5/4 of the bound): amortized.
                compact();
            } else {
                popHead();
            }
        }
    }

    private void forgetOldest(long now) {
        while (head != tail) {
            Tables t = tables;
            int e = ((int) head & t.mask) * WORDS;
            if (isLive(t.entries[e + SHAPE]) && live <= maximumSize && t.entries[e + EXPIRES] - now > 0) {
                break;
            }
            popHead();
        }
        long length = tail - head;
        if (length > MIN_COMPACT && length > 2L * live) {
            compact();
        }
    }

    private void popHead() {
        Tables t = tables;
        int slot = (int) head & t.mask;
        int e = slot * WORDS;
        long[] entries = t.entries;
        long shape = entries[e + SHAPE];
        if (isLive(shape)) {
            unlinkAt(t, indexOfSlot(t, (int) (entries[e + HASH_START] >>> 32), slot));
        }
        int bytes = bytesOf((int) (shape >>> 32), (int) shape);
        arenaHead = wrap(arenaHead + bytes, t.arena.length);
        arenaUsed -= bytes;
        releaseNamespace((int) entries[e + ATTEMPTS_NS]);
        entries[e + SHAPE] = 0;
        head++;
    }

    /** Makes the entry at index position {@code at} stale and takes it out of the index; tells of a reply's. */
    private void unlinkAt(Tables t, int at) {
        int slot = slotAt(t, at);
        int e = slot * WORDS;
        if ((t.entries[e + SHAPE] & REPLIED) != 0) {
            CaffeineDedupStore.Done done = materialize(t, slot, null);
            forgotten.replyForgotten(done.key, done.token);
        }
        t.entries[e + SHAPE] &= ~(long) LIVE;
        delete(t.index, at);
        live--;
    }

    /** Drops the stale entries, moving the live ones towards the tail in order, their bytes with them. */
    private void compact() {
        // Towards the tail, not the head: an entry only ever moves to a later position, so an iteration that
        // has not reached it yet still will.
        Tables t = tables;
        long[] entries = t.entries;
        byte[] arena = t.arena;
        int length = arena.length;
        long write = tail;
        int readOffset = arenaUsed;
        int writeOffset = arenaUsed;
        for (long r = tail - 1; r >= head; r--) {
            int from = ((int) r & t.mask) * WORDS;
            long shape = entries[from + SHAPE];
            int bytes = bytesOf((int) (shape >>> 32), (int) shape);
            readOffset -= bytes;
            if (!isLive(shape)) {
                releaseNamespace((int) entries[from + ATTEMPTS_NS]);
                continue;
            }
            write--;
            writeOffset -= bytes;
            int start = wrap(arenaHead + writeOffset, length);
            if (writeOffset != readOffset) {
                moveBackward(arena, wrap(arenaHead + readOffset, length), start, bytes);
            }
            int to = ((int) write & t.mask) * WORDS;
            if (to != from) {
                System.arraycopy(entries, from, entries, to, WORDS);
            }
            entries[to + HASH_START] = (entries[to + HASH_START] & HIGH) | (start & LOW);
        }
        head = write;
        arenaHead = wrap(arenaHead + writeOffset, length);
        arenaUsed -= writeOffset;
        rebuildIndex(t);
    }

    private void growRing() {
        Tables t = tables;
        int capacity = (t.mask + 1) << 1;
        int mask = capacity - 1;
        long[] entries = new long[capacity * WORDS];
        for (long r = head; r < tail; r++) {
            System.arraycopy(t.entries, ((int) r & t.mask) * WORDS, entries, ((int) r & mask) * WORDS, WORDS);
        }
        Tables grown = new Tables(entries, new long[capacity << 1], t.arena);
        rebuildIndex(grown);
        tables = grown;
    }

    private void growArena(int bytes) {
        Tables t = tables;
        byte[] old = t.arena;
        long size = Math.max((long) arenaUsed + bytes, old.length + (long) (old.length >> 1));
        byte[] arena = new byte[(int) Math.min(size, MAX_ARENA)];
        int first = Math.min(arenaUsed, old.length - arenaHead);
        System.arraycopy(old, arenaHead, arena, 0, first);
        System.arraycopy(old, 0, arena, first, arenaUsed - first);
        arenaHead = 0;
        // Written in place: a lock-free read still on the old arena may meet the new starts, and checks them.
        long[] entries = t.entries;
        int offset = 0;
        for (long r = head; r < tail; r++) {
            int e = ((int) r & t.mask) * WORDS;
            entries[e + HASH_START] = (entries[e + HASH_START] & HIGH) | offset;
            long shape = entries[e + SHAPE];
            offset += bytesOf((int) (shape >>> 32), (int) shape);
        }
        tables = new Tables(entries, t.index, arena);
    }

    private void rebuildIndex(Tables t) {
        Arrays.fill(t.index, 0L);
        for (long r = head; r < tail; r++) {
            int slot = (int) r & t.mask;
            int e = slot * WORDS;
            if (isLive(t.entries[e + SHAPE])) {
                insert(t.index, (int) (t.entries[e + HASH_START] >>> 32), slot);
            }
        }
    }

    private int acquireNamespace(String namespace) {
        Integer known = namespaceIds.get(namespace);
        int ns;
        if (known != null) {
            ns = known;
        } else {
            ns = 0;
            while (ns < namespaces.length && namespaces[ns] != null) {
                ns++;
            }
            if (ns == namespaces.length) {
                namespaces = Arrays.copyOf(namespaces, ns << 1);
                namespaceRefs = Arrays.copyOf(namespaceRefs, ns << 1);
            }
            namespaces[ns] = namespace;
            namespaceIds.put(namespace, ns);
        }
        namespaceRefs[ns]++;
        return ns;
    }

    private void releaseNamespace(int ns) {
        if (--namespaceRefs[ns] == 0) {
            namespaceIds.remove(namespaces[ns]);
            namespaces[ns] = null;
        }
    }

    private Tables emptyTables() {
        int arena = (int) Math.min(MAX_ARENA, (long) initialRing * BYTES_PER_KEY);
        return new Tables(new long[initialRing * WORDS], new long[initialRing << 1], new byte[arena]);
    }

    // ---------------------------------------------------------------- the index

    private int hash(int ns, String id) {
        int h = idHash.applyAsInt(id) * 0x9E3779B9 + ns;
        h ^= h >>> 16;
        h *= 0x85EBCA6B;
        h ^= h >>> 13;
        h *= 0xC2B2AE35;
        return h ^ (h >>> 16);
    }

    private static void insert(long[] index, int hash, int slot) {
        int mask = index.length - 1;
        int i = hash & mask;
        while (index[i] != 0) {
            i = (i + 1) & mask;
        }
        index[i] = ((long) hash << 32) | (slot + 1);
    }

    /** The index position that points at {@code slot}, a live entry's. */
    private static int indexOfSlot(Tables t, int hash, int slot) {
        long[] index = t.index;
        int mask = index.length - 1;
        int i = hash & mask;
        while ((int) index[i] != slot + 1) {
            i = (i + 1) & mask;
        }
        return i;
    }

    /** Backward-shift deletion: each later entry of the probe run that may move into the hole does. */
    private static void delete(long[] index, int hole) {
        int mask = index.length - 1;
        int i = (hole + 1) & mask;
        while (true) {
            long moved = index[i];
            if (moved == 0) {
                break;
            }
            int home = (int) (moved >>> 32) & mask;
            if (((i - home) & mask) >= ((i - hole) & mask)) {
                index[hole] = moved;
                hole = i;
            }
            i = (i + 1) & mask;
        }
        index[hole] = 0;
    }

    // ---------------------------------------------------------------- the arena

    private static boolean isLive(long shape) {
        return (shape & LIVE) != 0;
    }

    private static int bytesOf(int idShape, int fpShape) {
        return (idShape & LENGTH) + (fpShape & FP_LENGTH);
    }

    private static int wrap(int position, int length) {
        return position >= length ? position - length : position;
    }

    /** Latin-1 when every char fits a byte, else UTF-16: exactly the chars, whatever they are. */
    private static int charsShape(String s) {
        int n = s.length();
        for (int i = 0; i < n; i++) {
            if (s.charAt(i) > 0xFF) {
                return UTF16 | (n << 1);
            }
        }
        return n;
    }

    private static int fingerprintShape(String fingerprint) {
        if (fingerprint == null) {
            return FP_NULL;
        }
        if (isSha256(fingerprint)) {
            return (FP_SHA256 << FP_KIND_SHIFT) | SHA256_BYTES;
        }
        int shape = charsShape(fingerprint);
        return ((shape & UTF16) != 0 ? FP_UTF16 : FP_LATIN1) << FP_KIND_SHIFT | (shape & LENGTH);
    }

    /** An entry's bytes as the arena holds them: the id's chars in its shape, then the fingerprint in its own. */
    private static byte[] encode(String id, int idShape, String fingerprint, int fpShape) {
        byte[] bytes = new byte[bytesOf(idShape, fpShape)];
        int p = writeChars(bytes, 0, id, (idShape & UTF16) != 0);
        switch (fpShape >>> FP_KIND_SHIFT) {
            case FP_SHA256 -> writeSha256(bytes, p, fingerprint);
            case FP_LATIN1 -> writeChars(bytes, p, fingerprint, false);
            case FP_UTF16 -> writeChars(bytes, p, fingerprint, true);
            default -> { }
        }
        return bytes;
    }

    /** Unpadded base64url of 32 bytes, in the one spelling that decodes and re-encodes to itself. */
    private static boolean isSha256(String s) {
        if (s.length() != SHA256_CHARS) {
            return false;
        }
        for (int i = 0; i < SHA256_CHARS; i++) {
            char c = s.charAt(i);
            if (c >= 128 || BASE64URL[c] < 0) {
                return false;
            }
        }
        // 43 chars carry 258 bits: the last two must be zero.
        return (BASE64URL[s.charAt(SHA256_CHARS - 1)] & 3) == 0;
    }

    private static void writeSha256(byte[] arena, int p, String s) {
        int length = arena.length;
        int bits = 0;
        int held = 0;
        for (int i = 0; i < SHA256_CHARS; i++) {
            bits = (bits << 6) | BASE64URL[s.charAt(i)];
            held += 6;
            if (held >= 8) {
                held -= 8;
                arena[p] = (byte) (bits >>> held);
                if (++p == length) {
                    p = 0;
                }
            }
        }
    }

    private static int writeChars(byte[] arena, int p, String s, boolean utf16) {
        int length = arena.length;
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (utf16) {
                arena[p] = (byte) (c >>> 8);
                if (++p == length) {
                    p = 0;
                }
            }
            arena[p] = (byte) c;
            if (++p == length) {
                p = 0;
            }
        }
        return p;
    }

    /** Whether the chars at {@code p} of the given shape are {@code s}'s; every position stays in the arena. */
    private static boolean sameChars(byte[] arena, int p, int shape, String s) {
        int length = arena.length;
        int n = s.length();
        if (p < 0 || p >= length) {
            return false;
        }
        if ((shape & UTF16) == 0) {
            if (shape != n) {
                return false;
            }
            for (int i = 0; i < n; i++) {
                if ((arena[p] & 0xFF) != s.charAt(i)) {
                    return false;
                }
                if (++p == length) {
                    p = 0;
                }
            }
        } else {
            if ((shape & LENGTH) != 2L * n) {
                return false;
            }
            for (int i = 0; i < n; i++) {
                int high = arena[p] & 0xFF;
                if (++p == length) {
                    p = 0;
                }
                if (((high << 8) | (arena[p] & 0xFF)) != s.charAt(i)) {
                    return false;
                }
                if (++p == length) {
                    p = 0;
                }
            }
        }
        return true;
    }

    /** The chars at {@code p}; on racy data, some string that validation will reject. */
    private static String readChars(byte[] arena, int p, boolean utf16, int bytes) {
        int length = arena.length;
        if (p < 0 || p >= length || bytes > 2 * MAX_ENTRY_CHARS) {
            return "";
        }
        if (!utf16) {
            byte[] latin1 = new byte[bytes];
            for (int i = 0; i < bytes; i++) {
                latin1[i] = arena[p];
                if (++p == length) {
                    p = 0;
                }
            }
            return new String(latin1, StandardCharsets.ISO_8859_1);
        }
        char[] chars = new char[bytes >> 1];
        for (int i = 0; i < chars.length; i++) {
            int high = arena[p] & 0xFF;
            if (++p == length) {
                p = 0;
            }
            chars[i] = (char) ((high << 8) | (arena[p] & 0xFF));
            if (++p == length) {
                p = 0;
            }
        }
        return new String(chars);
    }

    private static String readFingerprint(byte[] arena, int p, int shape) {
        switch (shape >>> FP_KIND_SHIFT) {
            case FP_NULL:
                return null;
            case FP_SHA256: {
                byte[] raw = new byte[SHA256_BYTES];
                int length = arena.length;
                if (p >= 0 && p < length) {
                    for (int i = 0; i < SHA256_BYTES; i++) {
                        raw[i] = arena[p];
                        if (++p == length) {
                            p = 0;
                        }
                    }
                }
                return SHA256_ENCODER.encodeToString(raw);
            }
            case FP_LATIN1:
                return readChars(arena, p, false, shape & FP_LENGTH);
            default:
                return readChars(arena, p, true, shape & FP_LENGTH);
        }
    }

    /** Copies {@code n} bytes from {@code from} to a later {@code to} of the ring of bytes, last byte first. */
    private static void moveBackward(byte[] arena, int from, int to, int n) {
        if (n == 0) {
            return;
        }
        int length = arena.length;
        int s = wrap(from + n - 1, length);
        int d = wrap(to + n - 1, length);
        for (int i = 0; i < n; i++) {
            arena[d] = arena[s];
            if (--s < 0) {
                s = length - 1;
            }
            if (--d < 0) {
                d = length - 1;
            }
        }
    }

    private static long powerOfTwoAtLeast(long n) {
        return n <= 1 ? 1 : Long.highestOneBit(n - 1) << 1;
    }
}
