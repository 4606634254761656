package dev.idem.spi;

import java.util.Objects;

/**
 * One key of a {@link KeyPage}: the key, and its state as {@link InspectableDedupStore#inspect} would have
 * shown it at some moment during the {@link InspectableDedupStore#list} call that found it.
 *
 * @param key the key: the namespace listed and the key's ID
 * @param stored its state, attempts, fingerprint, {@code expiresAt} and starts, as {@link StoredKey} documents them
 */
public record ListedKey(StoreKey key, StoredKey stored) {

    public ListedKey {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(stored, "stored");
    }
}
