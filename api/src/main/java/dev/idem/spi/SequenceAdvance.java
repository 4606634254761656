package dev.idem.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * The sequence guard's part of a completion: raise an aggregate's watermark to {@code number}
 * (never lower it) in the same atomic step that completes the event's key. See
 * {@link SequencedDedupStore}.
 *
 * @param aggregate the pipeline's namespace and the aggregate's ID (at most {@value StoreKey#MAX_ID_BYTES} UTF-8 bytes)
 * @param number the event's sequence number, at least 1
 * @param retention how long the watermark is remembered after its last change
 */
public record SequenceAdvance(StoreKey aggregate, long number, Duration retention) {

    public SequenceAdvance {
        Objects.requireNonNull(aggregate, "aggregate");
        Objects.requireNonNull(retention, "retention");
        if (number < 1) {
            throw new IllegalArgumentException("a sequence number is at least 1, got " + number);
        }
    }
}
