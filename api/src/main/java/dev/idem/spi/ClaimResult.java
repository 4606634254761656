package dev.idem.spi;

import java.time.Duration;

/**
 * What a store answers for one {@link ClaimRequest}. The runtime switches on it:
 * {@link Acquired} runs the handler, {@link Duplicate} acks without running it,
 * {@link InProgress} defers the message until the other owner's lease ends.
 */
public sealed interface ClaimResult {

    /**
     * The caller now owns the key until its lease ends.
     *
     * @param token the fencing token; {@code complete}, {@code release} and {@code renew}
     *        succeed only with the current owner's token
     * @param attempt 1 for a fresh claim; one more for each takeover of a claim whose lease ran
     *        out without completion
     */
    record Acquired(long token, int attempt) implements ClaimResult {
    }

    /**
     * The key was completed within its retention.
     *
     * @param fingerprintMatches whether the stored and requested fingerprints agree; {@code true}
     *        when either is absent
     */
    record Duplicate(boolean fingerprintMatches) implements ClaimResult {
    }

    /**
     * Another owner holds a live lease on the key (or an earlier request of the same batch
     * acquired it).
     *
     * @param retryAfter time until that lease ends, by the store's clock
     */
    record InProgress(Duration retryAfter) implements ClaimResult {
    }
}
