package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.extract.PayloadHash;
import java.util.Base64;

/** Payload fingerprints: unpadded URL-safe Base64 of the SHA-256, 43 characters. */
final class Fingerprints {

    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

    private Fingerprints() {
    }

    static String sha256(byte[] payload) {
        return ENCODER.encodeToString(PayloadHash.sha256(payload));
    }
}
