package dev.idem.runtime.config;

import java.time.Duration;

/**
 * In-process retries of a failing handler, while the pipeline holds the key's claim.
 *
 * @param maxAttempts handler runs in all, at least 1 (1 = no retry)
 * @param initialBackoff the wait before the first retry
 * @param maxBackoff the longest wait between two runs
 * @param multiplier how much each wait grows over the previous one
 * @param conflictAttempts handler runs at once, without back-off, after an optimistic update lost a race
 *        ({@code ConcurrentUpdateException}), before the failure counts as an ordinary one
 */
public record RetryPolicy(int maxAttempts, Duration initialBackoff, Duration maxBackoff, double multiplier,
        int conflictAttempts) {

    /** Default conflict attempts: {@link dev.idem.runtime.config.RuntimeConfigSpecs#RETRY_CONFLICT_ATTEMPTS}'s. */
    public RetryPolicy(int maxAttempts, Duration initialBackoff, Duration maxBackoff, double multiplier) {
        this(maxAttempts, initialBackoff, maxBackoff, multiplier, 5);
    }

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
