package dev.idem.store.redis;

import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Fencing tokens: random positive 63-bit numbers, drawn on the client.
 *
 * <p>Why random rather than a counter in Redis ({@code INCR}): a counter is reset when Redis loses its
 * data (a restart without persistence, a failover that loses the last writes), and a reset counter hands
 * out again the very tokens that consumers from before the loss still hold, so a stale consumer could
 * complete a newer owner's claim. Random tokens carry no state to lose, need no key shared by every
 * claim (a hot key, and in Cluster mode a key that cannot sit in every batch's slot), and cost nothing
 * on the server. Fencing compares the token of one key, so the chance that a stale owner's token equals
 * the current owner's is 2<sup>-63</sup> per comparison.
 *
 * <p>Each thread draws from its own generator, seeded once from {@link SecureRandom} so that processes
 * started at the same instant do not share a sequence. Thread-safe.
 */
final class Tokens {

    private static final SecureRandom SEEDS = new SecureRandom();
    private static final ThreadLocal<SplittableRandom> RANDOM =
            ThreadLocal.withInitial(() -> new SplittableRandom(SEEDS.nextLong()));

    private Tokens() {
    }

    /** A token in {@code [1, Long.MAX_VALUE]}. */
    static long next() {
        SplittableRandom random = RANDOM.get();
        long token;
        do {
            token = random.nextLong() & Long.MAX_VALUE;
        } while (token == 0);
        return token;
    }
}
