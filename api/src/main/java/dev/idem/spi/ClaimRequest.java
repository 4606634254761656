package dev.idem.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * One key to claim in a {@link DedupStore#claim} batch.
 *
 * @param key the namespaced key
 * @param fingerprint a digest of the payload, compared when the key is already completed;
 *        {@code null} when the pipeline does not fingerprint
 * @param lease how long the claim is exclusive before another consumer may take it over
 * @param retention how long a claim whose lease ran out is remembered for its attempt count
 *        (a completed key's retention is given to {@link DedupStore#complete})
 */
public record ClaimRequest(StoreKey key, String fingerprint, Duration lease, Duration retention) {

    public ClaimRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(retention, "retention");
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive: " + lease);
        }
    }
}
