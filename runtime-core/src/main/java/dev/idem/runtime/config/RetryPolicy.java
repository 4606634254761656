package dev.idem.runtime.config;

import java.time.Duration;

/**
 * In-process retries of a failing handler, while the pipeline holds the key's claim.
 *
 * @param maxAttempts handler runs in all, at least 1 (1 = no retry)
 * @param initialBackoff the wait before the first retry
 * @param maxBackoff the longest wait between two runs
 * @param multiplier how much each wait grows over the previous one
 */
public record RetryPolicy(int maxAttempts, Duration initialBackoff, Duration maxBackoff, double multiplier) {

    /** The wait before run {@code nextAttempt} (2 = first retry). */
    public Duration backoffBefore(int nextAttempt) {
        double factor = Math.pow(multiplier, Math.max(0, nextAttempt - 2));
        double nanos = initialBackoff.toNanos() * factor;
        if (nanos >= maxBackoff.toNanos()) {
            return maxBackoff;
        }
        return Duration.ofNanos((long) nanos);
    }
}
