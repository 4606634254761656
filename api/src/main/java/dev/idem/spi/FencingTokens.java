package dev.idem.spi;

import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Fencing tokens for a store's claims: random positive numbers below {@link Long#MAX_VALUE}, drawn on the client.
 *
 * <p>Why random rather than a counter kept by the store: the claimer knows its token before its statement or
 * script runs, which is how one batched write tells which keys it took; processes sharing a store need no
 * coordination and no hot counter key; and there is no state to lose, while a counter reset by a store that lost
 * its data (a restart without persistence, a failover that lost the last writes) would hand out again the tokens
 * that consumers from before the loss still hold, letting a stale owner complete a newer one's claim. Fencing
 * compares the tokens of one key, so a stale owner's token equals the current owner's with a chance of
 * 2<sup>-63</sup>.
 *
 * <p>Each thread draws from its own generator, seeded once from {@link SecureRandom}, so that processes started
 * at the same instant do not share a sequence. Thread-safe; never blocks after a thread's first call.
 */
public final class FencingTokens {

    private static final SecureRandom SEEDS = new SecureRandom();
    private static final ThreadLocal<SplittableRandom> RANDOM =
            ThreadLocal.withInitial(() -> new SplittableRandom(SEEDS.nextLong()));

    private FencingTokens() {
    }

    /** A new token in {@code [1, Long.MAX_VALUE)}. */
    public static long next() {
        return RANDOM.get().nextLong(1, Long.MAX_VALUE);
    }
}
