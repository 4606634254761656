package dev.idem.store.jdbc;

import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Fencing tokens: random positive 63-bit numbers. Random rather than a database sequence because the
 * claimer must know its token before the statement runs; that is how one upsert plus one read tells
 * which keys it took. Processes sharing a table need no coordination: a token matters only against
 * the other tokens of the same key, and two claims of one key draw the same token with a chance of
 * about 1 in 2^63. Each thread draws from its own generator, seeded from {@link SecureRandom}.
 */
final class Tokens {

    private static final SecureRandom SEEDS = new SecureRandom();
    private static final ThreadLocal<SplittableRandom> RANDOM =
            ThreadLocal.withInitial(() -> new SplittableRandom(SEEDS.nextLong()));

    private Tokens() {
    }

    static long next() {
        return RANDOM.get().nextLong(1, Long.MAX_VALUE);
    }
}
