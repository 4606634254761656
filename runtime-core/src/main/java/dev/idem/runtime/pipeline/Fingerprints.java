package dev.idem.runtime.pipeline;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

/** Payload fingerprints: unpadded URL-safe Base64 of the SHA-256, 43 characters. */
final class Fingerprints {

    // Cloning a prototype avoids the provider lookup of MessageDigest.getInstance on every message.
    private static final MessageDigest PROTOTYPE;
    private static final ThreadLocal<MessageDigest> DIGEST;
    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    static {
        try {
            PROTOTYPE = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new ExceptionInInitializerError(e);
        }
        DIGEST = ThreadLocal.withInitial(() -> {
            try {
                return (MessageDigest) PROTOTYPE.clone();
            } catch (CloneNotSupportedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private Fingerprints() {
    }

    static String sha256(byte[] payload) {
        return ENCODER.encodeToString(DIGEST.get().digest(payload));
    }
}
