package dev.idem.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * One claimed key to complete in a {@link DedupStore#completeAll} batch.
 *
 * @param key the namespaced key
 * @param token the fencing token its claim returned; only the current owner's token completes it
 * @param retention how long the completed key is remembered
 */
public record CompletionRequest(StoreKey key, long token, Duration retention) {
    public CompletionRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(retention, "retention");
    }
}
