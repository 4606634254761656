package dev.idem.bench.scale;

import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.runtime.extract.PayloadHash;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The keys {@link StoreScaleBenchmark} writes, as a pipeline with the default settings writes them: namespace
 * {@value #NAMESPACE} (the pipeline's name), a random UUID as the message ID (or its digest, under
 * {@code -Didem.bench.key-digest=sha256-128}, by the runtime's own {@link KeyDigest}), the SHA-256 fingerprint of a
 * 100-byte payload (unpadded URL-safe Base64, as the runtime's {@code Fingerprints}), lease 30 s, retention 7 days
 * for the claim and for the completion (the defaults of {@code lease} and {@code retention}).
 */
final class Workload {

    static final String NAMESPACE = "orders";
    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofDays(7);
    static final int FILL_BATCH = 1000;
    /** What the store keeps of each ID: {@code -Didem.bench.key-digest} as {@code store.key-digest}, default none. */
    static final KeyDigest KEY_DIGEST = keyDigest(System.getProperty("idem.bench.key-digest", "none"));

    private static final Base64.Encoder FINGERPRINT = Base64.getUrlEncoder().withoutPadding();

    private Workload() {
    }

    /** {@code size} claim requests of fresh keys. */
    static List<ClaimRequest> requests(int size) {
        return requests(size, RETENTION);
    }

    /** {@code size} claim requests of fresh keys whose claims are kept {@code retention} after their lease. */
    static List<ClaimRequest> requests(int size, Duration retention) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<ClaimRequest> requests = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            String id = randomUuid(random);
            requests.add(new ClaimRequest(new StoreKey(NAMESPACE, KEY_DIGEST.apply(id)), fingerprint(id), LEASE,
                    retention));
        }
        return requests;
    }

    private static KeyDigest keyDigest(String value) {
        for (KeyDigest digest : KeyDigest.values()) {
            if (digest.configValue().equals(value)) {
                return digest;
            }
        }
        throw new IllegalArgumentException("-Didem.bench.key-digest must be one of "
                + RuntimeConfigSpecs.KEY_DIGEST.allowedValues() + ", as store.key-digest, not '" + value + "'");
    }

    /** The fingerprint of a 100-byte JSON payload naming {@code id}, as the runtime computes it. */
    private static String fingerprint(String id) {
        String payload = "{\"orderId\":\"" + id + "\",\"amount\":1999,\"currency\":\"EUR\",\"note\":\"";
        StringBuilder padded = new StringBuilder(100).append(payload);
        while (padded.length() < 98) {
            padded.append('x');
        }
        padded.append("\"}");
        return FINGERPRINT.encodeToString(PayloadHash.sha256(padded.toString().getBytes(StandardCharsets.UTF_8)));
    }

    /** The tokens of a claim whose keys must all have been acquired. */
    static long[] tokens(List<ClaimResult> results) {
        long[] tokens = new long[results.size()];
        for (int i = 0; i < tokens.length; i++) {
            if (!(results.get(i) instanceof ClaimResult.Acquired acquired)) {
                throw new IllegalStateException("A fresh key was not acquired: " + results.get(i));
            }
            tokens[i] = acquired.token();
        }
        return tokens;
    }

    static List<CompletionRequest> completions(List<ClaimRequest> requests, long[] tokens) {
        return completions(requests, tokens, RETENTION);
    }

    /** The completions of {@code requests}, claimed with {@code tokens}, remembered for {@code retention}. */
    static List<CompletionRequest> completions(List<ClaimRequest> requests, long[] tokens, Duration retention) {
        List<CompletionRequest> completions = new ArrayList<>(requests.size());
        for (int i = 0; i < tokens.length; i++) {
            completions.add(new CompletionRequest(requests.get(i).key(), tokens[i], retention));
        }
        return completions;
    }

    static void checkCompleted(List<CompletionResult> results) {
        for (CompletionResult result : results) {
            if (!CompletionResult.COMPLETED.equals(result)) {
                throw new IllegalStateException("A claimed key was not completed: " + result);
            }
        }
    }

    /** A version 4 UUID as text, as {@link UUID#randomUUID()} makes one, without its lock on one SecureRandom. */
    static String randomUuid(ThreadLocalRandom random) {
        return new UUID((random.nextLong() & ~0xF000L) | 0x4000L,
                (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L).toString();
    }

    /**
     * Puts {@code keys} completed keys into {@code store}: {@code threads} threads, each claiming batches of
     * {@value #FILL_BATCH} fresh keys and completing each batch with one {@code completeAll}.
     *
     * @return the nanoseconds it took
     */
    static long fill(DedupStore store, long keys, int threads) throws Exception {
        AtomicLong left = new AtomicLong(keys);
        long start = System.nanoTime();
        run(threads, (thread, failed) -> {
            long take;
            while (failed.get() == null && (take = Math.min(FILL_BATCH, left.getAndAdd(-FILL_BATCH))) > 0) {
                List<ClaimRequest> requests = requests((int) take);
                long[] tokens = tokens(store.claim(requests));
                checkCompleted(store.completeAll(completions(requests, tokens)));
            }
        });
        return System.nanoTime() - start;
    }

    /** The timed calls of one load run. */
    record Timed(Latencies.Sorted claims, Latencies.Sorted completions, long keys, long nanos) {

        double keysPerSecond() {
            return keys / (nanos / 1e9);
        }
    }

    /**
     * For {@code seconds}, {@code threads} threads each claim {@code batch} fresh keys, then complete them: one
     * {@code complete} for a batch of 1 (as with {@code commit.batch-size: 1}), one {@code completeAll} otherwise
     * (as the runtime sends the completions of a linger window). Each claim and each completion call is timed.
     */
    static Timed load(DedupStore store, int batch, double seconds, int threads) throws Exception {
        List<Latencies> claims = new ArrayList<>();
        List<Latencies> completions = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            claims.add(new Latencies());
            completions.add(new Latencies());
        }
        AtomicLong keys = new AtomicLong();
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        run(threads, (thread, failed) -> {
            Latencies claimTimes = claims.get(thread);
            Latencies completionTimes = completions.get(thread);
            long done = 0;
            while (failed.get() == null && System.nanoTime() < deadline) {
                List<ClaimRequest> requests = requests(batch);
                long t0 = System.nanoTime();
                List<ClaimResult> results = store.claim(requests);
                long t1 = System.nanoTime();
                long[] tokens = tokens(results);
                long t2 = System.nanoTime();
                List<CompletionResult> completed = batch == 1
                        ? List.of(store.complete(requests.get(0).key(), tokens[0], RETENTION)
                                ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER)
                        : store.completeAll(completions(requests, tokens));
                long t3 = System.nanoTime();
                checkCompleted(completed);
                claimTimes.add(t1 - t0);
                completionTimes.add(t3 - t2);
                done += batch;
            }
            keys.addAndGet(done);
        });
        return new Timed(Latencies.merge(claims), Latencies.merge(completions), keys.get(), System.nanoTime() - start);
    }

    @FunctionalInterface
    interface Task {
        /** @param failed the first failure of any thread, {@code null} while there is none: stop when set */
        void run(int thread, AtomicReference<Throwable> failed) throws Exception;
    }

    /** Runs {@code task} on {@code threads} threads and waits for them; the first failure is thrown. */
    static void run(int threads, Task task) throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> started = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            int thread = i;
            Thread t = new Thread(() -> {
                try {
                    task.run(thread, failure);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "scale-" + i);
            t.start();
            started.add(t);
        }
        joinAll(started, failure);
    }

    /** Waits for {@code threads}, then throws the first failure that one of them set in {@code failure}. */
    static void joinAll(List<Thread> threads, AtomicReference<Throwable> failure) throws Exception {
        for (Thread t : threads) {
            t.join();
        }
        Throwable first = failure.get();
        if (first instanceof Exception e) {
            throw e;
        }
        if (first != null) {
            throw new IllegalStateException(first);
        }
    }
}
