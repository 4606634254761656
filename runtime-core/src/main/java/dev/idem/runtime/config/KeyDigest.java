package dev.idem.runtime.config;

import dev.idem.runtime.extract.PayloadHash;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

/**
 * What a dedup store keeps of a message's idempotency key ({@code store.key-digest}): the key itself, or a
 * fixed-size digest of it. The runtime applies it where it builds a {@link dev.idem.spi.StoreKey} (the message's
 * key and the sequence guard's aggregate), and {@code idem store} and the console apply it to an ID an operator
 * types, so every store gets it without knowing. Logs, metrics, spans, dead-letter headers, emitted message IDs and
 * the handler keep the real key.
 *
 * <p>Immutable and thread-safe.
 */
public enum KeyDigest {

    /** The store keeps the key as it is: up to 512 bytes of UTF-8. */
    NONE {
        @Override
        public String apply(String id) {
            return id;
        }
    },

    /**
     * The store keeps the first 16 bytes (128 bits) of the SHA-256 of the key's UTF-8, as unpadded URL-safe Base64:
     * 22 ASCII characters whatever the key's length.
     */
    SHA256_128 {
        @Override
        public String apply(String id) {
            byte[] hash = PayloadHash.sha256(id.getBytes(StandardCharsets.UTF_8));
            return ENCODER.encodeToString(Arrays.copyOf(hash, 16));
        }
    };

    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    /** The ID a store holds for the message key {@code id}. */
    public abstract String apply(String id);

    /** How the value is written in the configuration: {@code none}, {@code sha256-128}. */
    public String configValue() {
        return RuntimeConfigSpecs.configValue(this);
    }
}
