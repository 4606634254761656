package dev.idem.runtime.extract;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * SHA-256 of payloads on the hot path: one digest per thread, since {@link MessageDigest} is not
 * thread-safe and a fresh instance per message would cost a provider look-up. Thread-safe.
 */
public final class PayloadHash {

    private static final ThreadLocal<MessageDigest> DIGEST = ThreadLocal.withInitial(PayloadHash::newDigest);

    private PayloadHash() {
    }

    private static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            // Every Java platform must provide SHA-256.
            throw new IllegalStateException("This JVM has no SHA-256", e);
        }
    }

    /** The 32-byte SHA-256 of {@code payload}. */
    public static byte[] sha256(byte[] payload) {
        return DIGEST.get().digest(payload);
    }
}
