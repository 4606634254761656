package dev.idem.spi;

import java.time.Instant;
import java.util.Objects;

/**
 * One key as {@link InspectableDedupStore#inspect} found it.
 *
 * @param state claimed (a live lease) or completed (within its retention)
 * @param attempts the attempt number of the current claim, or of the claim that completed the key: 1 for
 *        a first claim, one more for each takeover of a claim whose lease ran out
 * @param fingerprint the payload fingerprint the current owner (or the completing owner) gave, or
 *        {@code null} when there was none
 * @param expiresAt for {@link State#CLAIMED}, when the lease ends (another consumer may then take the
 *        key over); for {@link State#COMPLETED}, when the key is forgotten. The store measures the time
 *        left on its own clock and adds it to this host's wall clock when it answers, so skew between
 *        the two clocks does not shift it; each store documents the precision.
 * @param starts for {@link State#CLAIMED}, the handler runs of the key that began and never completed, as
 *        {@link DedupStore#recordStart} counted them since the key was first claimed (the count
 *        {@code max-deliveries} is compared with); {@code 0} for {@link State#COMPLETED}, for a claim with no
 *        recorded start, and for a store that does not record starts. Never negative.
 */
public record StoredKey(State state, int attempts, String fingerprint, Instant expiresAt, int starts) {

    /** The two states a key can be seen in; an absent key is an empty {@code Optional}. */
    public enum State {
        /** An owner holds a live lease and may be running the handler. */
        CLAIMED,
        /** The handler ran to completion; claims answer {@link ClaimResult.Duplicate}. */
        COMPLETED
    }

    public StoredKey {
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(expiresAt, "expiresAt");
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1: " + attempts);
        }
        if (starts < 0) {
            throw new IllegalArgumentException("starts must not be negative: " + starts);
        }
    }

    /**
     * A key with no recorded starts: the form of a store that does not record them, kept for stores
     * written before {@code starts} existed.
     */
    public StoredKey(State state, int attempts, String fingerprint, Instant expiresAt) {
        this(state, attempts, fingerprint, expiresAt, 0);
    }
}
