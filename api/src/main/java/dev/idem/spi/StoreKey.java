package dev.idem.spi;

import java.util.Objects;

/**
 * An idempotency key as a store keeps it: the pipeline's namespace and the message's key.
 * Two pipelines consuming the same message claim two different store keys.
 *
 * <p>Both parts are arbitrary UTF-8 text (quotes, colons, newlines included); the namespace is at
 * most {@value #MAX_NAMESPACE_BYTES} and the key part at most {@value #MAX_ID_BYTES} bytes of UTF-8, and
 * every store must hold keys that long. Stores must compare them exactly.
 *
 * @param namespace the pipeline (consumer) name
 * @param id the message's idempotency key
 */
public record StoreKey(String namespace, String id) {

    /** The longest key, in UTF-8 bytes, the runtime hands to a store. */
    public static final int MAX_ID_BYTES = 512;

    /**
     * The longest namespace, in UTF-8 bytes, the runtime hands to a store: the configuration refuses a longer
     * pipeline name or {@code namespace}, since the JDBC store's column holds no more.
     */
    public static final int MAX_NAMESPACE_BYTES = 255;

    public StoreKey {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(id, "id");
    }
}
