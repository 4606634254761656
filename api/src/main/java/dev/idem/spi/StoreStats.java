package dev.idem.spi;

/**
 * What {@link InspectableDedupStore#stats} counted.
 *
 * @param claimed keys with a live lease
 * @param completed keys completed and within their retention
 * @param truncated {@code true} when the store stopped before it had seen every key (it reached a bound
 *        on time or keys it documents); the counts are then lower bounds
 */
public record StoreStats(long claimed, long completed, boolean truncated) {

    public StoreStats {
        if (claimed < 0 || completed < 0) {
            throw new IllegalArgumentException("counts cannot be negative: claimed " + claimed
                    + ", completed " + completed);
        }
    }
}
