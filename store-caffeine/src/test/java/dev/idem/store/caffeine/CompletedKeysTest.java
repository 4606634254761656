package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class CompletedKeysTest {

    private final AtomicLong now = new AtomicLong(1_000);
    private final AtomicLong tokens = new AtomicLong();

    @Test
    void forgetsTheOldestCompletionsPastTheBound() {
        CompletedKeys keys = new CompletedKeys(3, 0, now::get);
        for (int i = 1; i <= 5; i++) {
            keys.put(done("k" + i, 100), now.get());
        }

        assertThat(keys.size()).isEqualTo(3);
        assertThat(keys.get(key("k1"))).isNull();
        assertThat(keys.get(key("k2"))).isNull();
        for (int i = 3; i <= 5; i++) {
            assertThat(keys.get(key("k" + i))).as("k%d", i).isNotNull();
        }
    }

    @Test
    void aCompletionPastItsRetentionReadsAbsentAndLeavesAtTheHeadOnTheNextWrite() {
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        keys.put(done("old", 10), now.get());
        now.addAndGet(10);

        assertThat(keys.get(key("old"))).isNull();
        assertThat(keys.size()).as("not removed before a write").isEqualTo(1);
        keys.put(done("new", 10), now.get());
        assertThat(keys.size()).isEqualTo(1);
        assertThat(keys.get(key("new"))).isNotNull();
    }

    @Test
    void aShorterRetentionBehindALongerOneReadsAbsentOnceItEnds() {
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        keys.put(done("long", 1_000), now.get());
        keys.put(done("short", 10), now.get());
        now.addAndGet(20);
        keys.put(done("later", 1_000), now.get());

        assertThat(keys.get(key("short"))).isNull();
        assertThat(keys.get(key("long"))).isNotNull();
        assertThat(keys.size()).as("held until it reaches the head").isEqualTo(3);
        keys.removeExpired();
        assertThat(keys.size()).isEqualTo(2);
    }

    @Test
    void theStaleEntryOfAKeyCompletedAgainNeverForgetsItsNewCompletion() {
        CompletedKeys keys = new CompletedKeys(2, 0, now::get);
        keys.put(done("a", 100), now.get());
        keys.remove(key("a"));
        keys.put(done("b", 100), now.get());
        CaffeineDedupStore.Done again = done("a", 100);
        keys.put(again, now.get());

        keys.put(done("c", 100), now.get());

        assertThat(keys.get(key("a")).token).as("the new completion's token").isEqualTo(again.token);
        assertThat(keys.get(key("b"))).as("the oldest live completion").isNull();
        assertThat(keys.get(key("c"))).isNotNull();
        assertThat(keys.size()).isEqualTo(2);
    }

    @Test
    void theRingStaysWithinAFactorOfTheKeysHeldWhenKeysAreDeleted() {
        CompletedKeys keys = new CompletedKeys(1_000_000, 0, now::get);
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < 1_000; i++) {
                keys.put(done("r" + round + "-" + i, 1_000_000), now.get());
            }
            for (int i = 0; i < 1_000; i++) {
                keys.remove(key("r" + round + "-" + i));
            }
            keys.put(done("kept-" + round, 1_000_000), now.get());
        }

        assertThat(keys.size()).isEqualTo(50);
        assertThat(keys.ringLength()).isLessThanOrEqualTo(2_000);
        for (int round = 0; round < 50; round++) {
            assertThat(keys.get(key("kept-" + round))).as("kept-%d", round).isNotNull();
        }
    }

    @Test
    void growsPastItsInitialCapacityKeepingTheOrder() {
        CompletedKeys keys = new CompletedKeys(10_000, 16, now::get);
        for (int i = 0; i < 12_000; i++) {
            keys.put(done("k" + i, 1_000_000), now.get());
        }

        assertThat(keys.size()).isEqualTo(10_000);
        assertThat(keys.get(key("k1999"))).isNull();
        assertThat(keys.get(key("k2000"))).isNotNull();
        assertThat(keys.get(key("k11999"))).isNotNull();
    }

    // ---------------------------------------------------------------- the compact layout

    @Test
    void idsOfAnyCharsAreKeptExactlyAndComparedWhole() {
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        List<String> ids = List.of("", "a", "café", "cafe\u0301", "ÿ\u0080\u00ff", "日本語-キー", "🎉-order-1", "🎉-order-2",
                "mixed é 日 🎉 end", "\uD800unpaired", "\uDC00", "nul\u0000char", "tab\tnew\nline:\"quoted\"");
        List<CaffeineDedupStore.Done> written = new ArrayList<>();
        for (String id : ids) {
            CaffeineDedupStore.Done done = done(id, 100);
            keys.put(done, now.get());
            written.add(done);
        }

        for (int i = 0; i < ids.size(); i++) {
            assertThat(keys.get(key(ids.get(i)))).as("id %s", ids.get(i)).isNotNull()
                    .extracting(d -> d.token).isEqualTo(written.get(i).token);
        }
        for (String absent : List.of("cafe", "caf", "cafés", "日本語-キ", "🎉-order-3", "\uD801unpaired", "A", " ")) {
            assertThat(keys.get(key(absent))).as("id %s", absent).isNull();
        }
        assertThat(ids(keys)).containsExactlyElementsOf(ids);
    }

    @Test
    void keysWhoseHashesCollideAreToldApartByTheirWholeId() {
        // Every id hashes alike: each lookup walks the one probe run and must compare namespace and chars.
        CompletedKeys keys = new CompletedKeys(1_000, 0, now::get, id -> 42);
        Map<String, Long> tokenOf = new HashMap<>();
        for (int i = 0; i < 300; i++) {
            String id = "k" + i;
            CaffeineDedupStore.Done done = done(id, 1_000);
            keys.put(done, now.get());
            tokenOf.put(id, done.token);
        }
        for (int i = 0; i < 300; i += 3) {
            assertThat(keys.remove(key("k" + i))).isNotNull();
            tokenOf.remove("k" + i);
        }
        for (int i = 0; i < 300; i += 6) {
            CaffeineDedupStore.Done again = done("k" + i, 1_000);
            keys.put(again, now.get());
            tokenOf.put("k" + i, again.token);
        }

        for (int i = 0; i < 300; i++) {
            String id = "k" + i;
            CaffeineDedupStore.Done found = keys.get(key(id));
            if (tokenOf.containsKey(id)) {
                assertThat(found).as(id).isNotNull();
                assertThat(found.token).as(id).isEqualTo(tokenOf.get(id));
            } else {
                assertThat(found).as(id).isNull();
            }
            assertThat(keys.get(key(id + "x"))).isNull();
            assertThat(keys.get(new StoreKey("other", id))).isNull();
        }
        assertThat(keys.size()).isEqualTo(tokenOf.size());
    }

    @Test
    void idsOfTheLongestLengthInEveryEncodingRoundTrip() {
        String ascii = "a".repeat(511);
        String threeByte = "日".repeat(170) + "ab";
        String fourByte = "🎉".repeat(128);
        List<String> ids = new ArrayList<>();
        for (String base : List.of(ascii, threeByte, fourByte)) {
            assertThat(base.substring(0, base.length() - 1).getBytes(StandardCharsets.UTF_8).length + 4)
                    .isGreaterThanOrEqualTo(StoreKey.MAX_ID_BYTES);
            for (char last : new char[] {'x', 'y', 'é'}) {
                ids.add(base.substring(0, base.length() - 1) + last);
            }
        }
        CompletedKeys keys = new CompletedKeys(5, 0, now::get);
        for (int round = 0; round < 20; round++) {
            for (String id : ids) {
                keys.put(done(id + round, 100), now.get());
            }
        }

        assertThat(keys.size()).isEqualTo(5);
        List<String> kept = ids.subList(ids.size() - 5, ids.size()).stream().map(id -> id + 19).toList();
        for (String id : kept) {
            assertThat(keys.get(key(id))).isNotNull();
        }
        assertThat(keys.get(key(ids.get(ids.size() - 6) + 19))).isNull();
        assertThat(ids(keys)).containsExactlyElementsOf(kept);
    }

    @Test
    void fingerprintsRoundTripWhateverTheirForm() throws Exception {
        byte[] digest = MessageDigest.getInstance("SHA-256").digest("payload".getBytes(StandardCharsets.UTF_8));
        String sha = Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
        assertThat(sha).hasSize(43);
        List<String> fingerprints = new ArrayList<>(List.of(sha,
                Base64.getUrlEncoder().withoutPadding().encodeToString(new byte[32]),
                "A".repeat(42) + "B", // 43 base64url chars whose last bits are not zero: not a canonical encoding
                sha.substring(0, 42) + "=", sha + "=", sha.substring(1), sha.replace('-', '+').replace('_', '/'),
                // 43 chars, one outside ASCII whose low seven bits are a base64url char ('A', 'a'), one past Latin-1
                sha.substring(0, 20) + "\u00C1" + sha.substring(21), sha.substring(0, 42) + "\u0161",
                "." + sha.substring(1), sha.substring(0, 39) + "\u0000" + sha.substring(40),
                "", "v1:abc", "é-指紋-🎉", "\uD800"));
        fingerprints.add(null);
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        for (int i = 0; i < fingerprints.size(); i++) {
            keys.put(new CaffeineDedupStore.Done(key("k" + i), i + 1, i + 2, fingerprints.get(i), now.get() + 100),
                    now.get());
        }

        for (int i = 0; i < fingerprints.size(); i++) {
            CaffeineDedupStore.Done done = keys.get(key("k" + i));
            assertThat(done.fingerprint).as("fingerprint %s", i).isEqualTo(fingerprints.get(i));
            assertThat(done.attempts).isEqualTo(i + 2);
            assertThat(done.expiresAt).isEqualTo(now.get() + 100);
        }
        Map<String, String> listed = new HashMap<>();
        for (CaffeineDedupStore.Done done : keys.all()) {
            listed.put(done.key.id(), done.fingerprint);
        }
        for (int i = 0; i < fingerprints.size(); i++) {
            assertThat(listed).containsEntry("k" + i, fingerprints.get(i));
        }
        assertThat(keys.remove(key("k0")).fingerprint).isEqualTo(sha);
    }

    @Test
    void manyRemoveAndPutCyclesLeaveNoDebrisInTheIndexOrTheRing() {
        CompletedKeys keys = new CompletedKeys(1_000, 16, now::get);
        for (int i = 0; i < 100; i++) {
            keys.put(done("kept-" + i, 1_000_000), now.get());
        }
        for (int cycle = 0; cycle < 50_000; cycle++) {
            String id = "churn-" + cycle;
            keys.put(done(id, 1_000_000), now.get());
            if (cycle % 2 == 0) {
                assertThat(keys.remove(key(id))).isNotNull();
            } else {
                CaffeineDedupStore.Done again = done(id, 1_000_000);
                keys.put(again, now.get());
                assertThat(keys.remove(key(id), again.token - 1)).as("the older completion's token").isFalse();
                assertThat(keys.remove(key(id), again.token)).isTrue();
            }
            assertThat(keys.get(key(id))).isNull();
        }

        assertThat(keys.size()).isEqualTo(100);
        assertThat(keys.ringLength()).isLessThanOrEqualTo(2_048);
        for (int i = 0; i < 100; i++) {
            assertThat(keys.get(key("kept-" + i))).as("kept-%d", i).isNotNull();
        }
        assertThat(keys.get(key("churn-7"))).isNull();
    }

    @Test
    void growsRingAndArenaPastTheirInitialSizeWithLongIds() {
        CompletedKeys keys = new CompletedKeys(100_000, 16, now::get);
        for (int i = 0; i < 5_000; i++) {
            keys.put(done(i + "-" + "x".repeat(300), 1_000_000), now.get());
        }

        assertThat(keys.size()).isEqualTo(5_000);
        assertThat(keys.arenaLength()).isGreaterThanOrEqualTo(5_000L * 300);
        for (int i = 0; i < 5_000; i++) {
            assertThat(keys.get(key(i + "-" + "x".repeat(300)))).as("key %d", i).isNotNull();
        }
    }

    @Test
    void theArenaWrapsAroundManyTimesUnderASmallBound() {
        CompletedKeys keys = new CompletedKeys(7, 0, now::get);
        Random random = new Random(5);
        List<CaffeineDedupStore.Done> written = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            String id = i + ":" + "é日a".repeat(random.nextInt(60)) + "z".repeat(random.nextInt(200));
            String fingerprint = switch (i % 3) {
                case 0 -> null;
                case 1 -> Base64.getUrlEncoder().withoutPadding().encodeToString(longBytes(i));
                default -> "fp-" + i;
            };
            CaffeineDedupStore.Done done = new CaffeineDedupStore.Done(key(id), i + 1, 1, fingerprint, now.get() + 100);
            keys.put(done, now.get());
            written.add(done);
        }

        assertThat(keys.size()).isEqualTo(7);
        assertThat(keys.arenaLength()).as("only the kept keys' bytes").isLessThan(7 * 2 * 800);
        List<CaffeineDedupStore.Done> kept = written.subList(written.size() - 7, written.size());
        for (CaffeineDedupStore.Done done : kept) {
            CaffeineDedupStore.Done found = keys.get(done.key);
            assertThat(found.token).isEqualTo(done.token);
            assertThat(found.fingerprint).isEqualTo(done.fingerprint);
        }
        for (CaffeineDedupStore.Done done : written.subList(written.size() - 100, written.size() - 7)) {
            assertThat(keys.get(done.key)).isNull();
        }
        assertThat(ids(keys)).containsExactlyElementsOf(kept.stream().map(d -> d.key.id()).toList());
    }

    @Test
    void theSameIdInTwoNamespacesIsTwoKeys() {
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        CaffeineDedupStore.Done inA = new CaffeineDedupStore.Done(new StoreKey("a", "order-1"), 1, 1, "fa", now.get() + 100);
        CaffeineDedupStore.Done inB = new CaffeineDedupStore.Done(new StoreKey("b", "order-1"), 2, 1, "fb", now.get() + 100);
        keys.put(inA, now.get());
        keys.put(inB, now.get());

        assertThat(keys.size()).isEqualTo(2);
        assertThat(keys.get(new StoreKey("a", "order-1")).fingerprint).isEqualTo("fa");
        assertThat(keys.get(new StoreKey("b", "order-1")).fingerprint).isEqualTo("fb");
        assertThat(keys.get(new StoreKey("c", "order-1"))).isNull();
        assertThat(keys.get(new StoreKey("", "order-1"))).isNull();
        assertThat(keys.remove(new StoreKey("a", "order-1"), 2)).as("b's token").isFalse();
        assertThat(keys.remove(new StoreKey("a", "order-1"))).isNotNull();
        assertThat(keys.get(new StoreKey("a", "order-1"))).isNull();
        assertThat(keys.get(new StoreKey("b", "order-1")).token).isEqualTo(2);
        List<StoreKey> listed = new ArrayList<>();
        keys.all().forEach(d -> listed.add(d.key));
        assertThat(listed).containsExactly(new StoreKey("b", "order-1"));
    }

    @Test
    void aNamespaceForgottenWithItsLastKeyIsNotConfusedWithTheNextOne() {
        CompletedKeys keys = new CompletedKeys(3, 0, now::get);
        for (int i = 0; i < 3; i++) {
            keys.put(new CaffeineDedupStore.Done(new StoreKey("first", "k" + i), i + 1, 1, null, now.get() + 100),
                    now.get());
        }
        for (int i = 0; i < 3; i++) {
            keys.put(new CaffeineDedupStore.Done(new StoreKey("second", "k" + i), 10 + i, 1, null, now.get() + 100),
                    now.get());
        }

        for (int i = 0; i < 3; i++) {
            assertThat(keys.get(new StoreKey("first", "k" + i))).isNull();
            assertThat(keys.get(new StoreKey("second", "k" + i)).token).isEqualTo(10 + i);
        }
        keys.put(new CaffeineDedupStore.Done(new StoreKey("first", "k0"), 20, 1, null, now.get() + 100), now.get());
        assertThat(keys.get(new StoreKey("first", "k0")).token).isEqualTo(20);
        assertThat(keys.get(new StoreKey("second", "k0"))).isNull();
        assertThat(keys.get(new StoreKey("second", "k1")).token).isEqualTo(11);
    }

    @Test
    void aNamespaceFreedByTheWriteThatNeedsItIsTakenAgainAndItsKeysFound() {
        // A bound of one: each write forgets the only entry, and with it the namespace that the write looked up
        // before taking the lock; alternating namespaces also hand each freed index to the other one.
        CompletedKeys keys = new CompletedKeys(1, 0, now::get);
        String[] namespaces = {"a", "b", "a", "a", "b", "b", "a"};
        for (int i = 0; i < namespaces.length; i++) {
            StoreKey written = new StoreKey(namespaces[i], "k" + (i % 2));
            keys.put(new CaffeineDedupStore.Done(written, i + 1, 1, null, now.get() + 100), now.get());

            assertThat(keys.get(written)).as("write %d", i).isNotNull();
            assertThat(keys.get(written).token).as("write %d", i).isEqualTo(i + 1);
            assertThat(keys.size()).isEqualTo(1);
            for (String namespace : new String[] {"a", "b"}) {
                for (String id : new String[] {"k0", "k1"}) {
                    StoreKey other = new StoreKey(namespace, id);
                    if (!other.equals(written)) {
                        assertThat(keys.get(other)).as("%s after write %d", other, i).isNull();
                    }
                }
            }
        }
    }

    @Test
    void iterationVisitsEveryCompletionOnceAcrossChunksInCompletionOrder() {
        CompletedKeys keys = new CompletedKeys(10_000, 0, now::get);
        for (int i = 0; i < 5_000; i++) {
            keys.put(done("k" + i, i % 2 == 0 ? 1_000 : 10), now.get());
        }
        now.addAndGet(10);

        List<String> seen = ids(keys);
        assertThat(seen).hasSize(5_000).doesNotHaveDuplicates();
        assertThat(seen.get(0)).isEqualTo("k0");
        assertThat(seen.get(4_999)).isEqualTo("k4999");
        assertThat(keys.countLive(now.get())).isEqualTo(2_500);
        keys.clear();
        assertThat(ids(keys)).isEmpty();
        assertThat(keys.countLive(now.get())).isZero();
        assertThat(keys.get(key("k0"))).isNull();
        keys.put(done("k0", 10), now.get());
        assertThat(keys.get(key("k0"))).isNotNull();
    }

    @Test
    void removeOfACompletionAnswersItAndTheRingDropsItsEntryLater() {
        CompletedKeys keys = new CompletedKeys(2, 0, now::get);
        CaffeineDedupStore.Done a = done("a", 100);
        keys.put(a, now.get());
        assertThat(keys.remove(key("a"), a.token + 1)).isFalse();
        CaffeineDedupStore.Done removed = keys.remove(key("a"));
        assertThat(removed.token).isEqualTo(a.token);
        assertThat(removed.key).isEqualTo(a.key);
        assertThat(keys.remove(key("a"))).isNull();
        assertThat(keys.remove(key("a"), a.token)).isFalse();
        assertThat(keys.ringLength()).as("a stale entry, until it reaches the head on a write").isEqualTo(1);
        keys.put(done("b", 100), now.get());
        assertThat(keys.ringLength()).isEqualTo(1);
    }

    @Test
    void anIterationInProgressStillSeesEveryKeyHeldThroughoutWhenTheRingIsCompacted() {
        CompletedKeys keys = new CompletedKeys(100_000, 0, now::get);
        for (int i = 0; i < 5_000; i++) {
            keys.put(done("k" + i, 1_000_000), now.get());
        }
        Iterator<CaffeineDedupStore.Done> iteration = keys.all().iterator();
        assertThat(iteration.next().key.id()).as("the first chunk read").isEqualTo("k0");

        // Deleting most keys makes the ring more than twice the keys held: the next write compacts it.
        for (int i = 0; i < 5_000; i++) {
            if (i % 10 != 0) {
                keys.remove(key("k" + i));
            }
        }
        long before = keys.ringLength();
        keys.put(done("late", 1_000_000), now.get());
        assertThat(keys.ringLength()).as("compacted").isLessThan(before);

        Set<String> seen = new HashSet<>();
        iteration.forEachRemaining(done -> seen.add(done.key.id()));
        for (int i = 2_000; i < 5_000; i += 10) {
            assertThat(seen).as("k%d, held throughout", i).contains("k" + i);
        }
        for (String id : seen) {
            int i = id.equals("late") ? 0 : Integer.parseInt(id.substring(1));
            if (i >= CompletedKeys.CHUNK) {
                assertThat(i % 10).as("%s, read after it was deleted", id).isZero();
            }
        }
    }

    // ---------------------------------------------------------------- concurrency

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void lockFreeReadsRacingWritesNeverMissARecentKeyNorFindANewOne() throws Exception {
        int bound = 256;
        int writers = 2;
        int readers = 3;
        int perWriter = 150_001; // writer 1 ends on a key it keeps, so the tier ends full
        int readsPerReader = 400_000;
        CompletedKeys keys = new CompletedKeys(bound, 0, now::get);
        // Before each put, the count of puts returned so far: the puts after a key's are at most the count read
        // after a get, less this, plus one in flight per writer.
        long[][] before = new long[writers][perWriter];
        AtomicIntegerArray published = new AtomicIntegerArray(writers);
        for (int w = 0; w < writers; w++) {
            published.set(w, -1);
        }
        AtomicLong puts = new AtomicLong();
        Queue<String> failures = new ConcurrentLinkedQueue<>();
        AtomicLong checkedFound = new AtomicLong();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            int writer = w;
            threads.add(new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < perWriter; i++) {
                        before[writer][i] = puts.get();
                        keys.put(raced(writer, i), now.get());
                        // Writer 1 removes every fifth key again: stale entries, so compactions race the reads too.
                        // (The other writer may have pushed it past the bound already.)
                        if (writer == 1 && i % 5 == 4) {
                            keys.remove(raced(writer, i).key, token(writer, i));
                        }
                        puts.incrementAndGet();
                        published.set(writer, i);
                    }
                } catch (Throwable e) {
                    failures.add("writer " + writer + ": " + e);
                }
            }));
        }
        for (int r = 0; r < readers; r++) {
            int reader = r;
            threads.add(new Thread(() -> {
                try {
                    Random random = new Random(reader);
                    start.await();
                    for (int n = 0; n < readsPerReader; n++) {
                        int writer = random.nextInt(writers);
                        if (random.nextInt(4) == 0) {
                            StoreKey never = raced(writer, perWriter + random.nextInt(1_000_000)).key;
                            if (keys.get(never) != null) {
                                failures.add("found " + never.id() + ", never completed");
                            }
                            continue;
                        }
                        int last = published.get(writer);
                        int i = last - random.nextInt(2 * bound);
                        if (i < 0 || (writer == 1 && i % 5 == 4)) {
                            continue;
                        }
                        CaffeineDedupStore.Done expected = raced(writer, i);
                        CaffeineDedupStore.Done found = keys.get(expected.key);
                        long after = puts.get();
                        if (found != null) {
                            if (found.token != expected.token || found.attempts != expected.attempts
                                    || !Objects.equals(found.fingerprint, expected.fingerprint)
                                    || found.expiresAt != expected.expiresAt || !found.key.equals(expected.key)) {
                                failures.add("read of " + expected.key.id() + " answered another completion");
                            }
                        } else if (after - before[writer][i] + writers <= bound - 1) {
                            failures.add("lost " + expected.key.id() + " with " + (after - before[writer][i])
                                    + " puts since");
                        }
                        if (after - before[writer][i] + writers <= bound - 1) {
                            checkedFound.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    failures.add("reader " + reader + ": " + e);
                }
            }));
        }
        threads.add(new Thread(() -> {
            try {
                start.await();
                // At least until the writers are done: they end, so this does too.
                for (int n = 0; n < 200 || published.get(0) < perWriter - 1 || published.get(1) < perWriter - 1; n++) {
                    for (CaffeineDedupStore.Done done : keys.all()) {
                        String[] parts = done.key.id().split("/");
                        CaffeineDedupStore.Done expected = raced(Integer.parseInt(parts[0]),
                                Integer.parseInt(parts[1].split("-")[0]));
                        if (done.token != expected.token || !Objects.equals(done.fingerprint, expected.fingerprint)) {
                            failures.add("iteration built " + done.key.id() + " wrong");
                        }
                    }
                    keys.countLive(now.get());
                }
            } catch (Throwable e) {
                failures.add("iterator: " + e);
            }
        }));
        runTogether(threads, start);

        assertThat(failures).isEmpty();
        assertThat(checkedFound.get()).as("reads that had to find their key").isPositive();
        assertThat(keys.size()).isEqualTo(bound);
        List<StoreKey> kept = new ArrayList<>();
        keys.all().forEach(done -> kept.add(done.key));
        assertThat(kept).hasSize(bound).allSatisfy(key -> assertThat(keys.get(key)).isNotNull());
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void writesInManyNamespacesRacingClearsNeverFailAndKeepWhatTheyWroteAfterTheLast() throws Exception {
        // A write looks its namespace up before it takes the lock; a clear in between empties the table of
        // namespaces (back to a few slots) under the lock. Sixteen namespaces put their indexes past that size.
        CompletedKeys keys = new CompletedKeys(1_000, 0, now::get);
        int writers = 2;
        int perWriter = 40_000;
        Queue<String> failures = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        AtomicIntegerArray done = new AtomicIntegerArray(writers);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            int writer = w;
            threads.add(new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < perWriter; i++) {
                        keys.put(new CaffeineDedupStore.Done(new StoreKey("ns-" + (i % 16), writer + "/" + i),
                                i + 1, 1, null, now.get() + 100), now.get());
                    }
                } catch (Throwable e) {
                    failures.add("writer " + writer + ": " + e);
                } finally {
                    done.set(writer, 1);
                }
            }));
        }
        threads.add(new Thread(() -> {
            try {
                start.await();
                // Until both writers are done: they end, so this does too.
                while (done.get(0) == 0 || done.get(1) == 0) {
                    keys.clear();
                    Thread.onSpinWait();
                }
            } catch (Throwable e) {
                failures.add("clear: " + e);
            }
        }));
        runTogether(threads, start);

        assertThat(failures).isEmpty();
        keys.clear();
        for (int i = 0; i < 32; i++) {
            keys.put(new CaffeineDedupStore.Done(new StoreKey("ns-" + (i % 16), "after/" + i), i + 1, 1, null,
                    now.get() + 100), now.get());
        }
        assertThat(keys.size()).isEqualTo(32);
        for (int i = 0; i < 32; i++) {
            assertThat(keys.get(new StoreKey("ns-" + (i % 16), "after/" + i)).token).isEqualTo(i + 1);
        }
    }

    /** Starts the threads, lets them go at once through {@code start}, and waits for every one to end. */
    private static void runTogether(List<Thread> threads, CountDownLatch start) throws InterruptedException {
        threads.forEach(Thread::start);
        start.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
    }

    private CaffeineDedupStore.Done raced(int writer, int i) {
        String id = writer + "/" + i + switch (i % 4) {
            case 0 -> "";
            case 1 -> "-é";
            case 2 -> "-日本-" + "x".repeat(i % 37);
            default -> "-🎉";
        };
        String fingerprint = switch (i % 3) {
            case 0 -> null;
            case 1 -> SHAS[i % SHAS.length];
            default -> "fp-" + i;
        };
        return new CaffeineDedupStore.Done(new StoreKey("ns" + (i % 2), id), token(writer, i), 1 + i % 7, fingerprint,
                1_000_000_000L + i);
    }

    private static long token(int writer, int i) {
        return writer * 1_000_000_000L + i + 1;
    }

    private static final String[] SHAS = new String[16];

    static {
        for (int i = 0; i < SHAS.length; i++) {
            SHAS[i] = Base64.getUrlEncoder().withoutPadding().encodeToString(longBytes(i * 7919L));
        }
    }

    /** 32 bytes derived from {@code seed}, as a SHA-256 would be. */
    private static byte[] longBytes(long seed) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(Long.toString(seed).getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<String> ids(CompletedKeys keys) {
        List<String> ids = new ArrayList<>();
        for (CaffeineDedupStore.Done done : keys.all()) {
            ids.add(done.key.id());
        }
        return ids;
    }

    private CaffeineDedupStore.Done done(String id, long retention) {
        return new CaffeineDedupStore.Done(key(id), tokens.incrementAndGet(), 1, null, now.get() + retention);
    }

    private static StoreKey key(String id) {
        return new StoreKey("ns", id);
    }
}
