package dev.idem.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * One claimed key to complete in a {@link DedupStore#completeAll} batch.
 *
 * @param key the namespaced key
 * @param token the fencing token its claim returned; only the current owner's token completes it
 * @param retention how long the completed key is remembered
 * @param advance the watermark to raise with the completion, or {@code null}; set only for a
 *        {@link SequencedDedupStore}, which applies it exactly as {@link SequencedDedupStore#completeAndAdvance} does
 */
public record CompletionRequest(StoreKey key, long token, Duration retention, SequenceAdvance advance) {

    public CompletionRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(retention, "retention");
    }

    /** A completion without a sequence advance. */
    public CompletionRequest(StoreKey key, long token, Duration retention) {
        this(key, token, retention, null);
    }
}
