package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.StoreKey;
import java.util.List;

/**
 * Finds a message's idempotency key through the extractor chain and checks it: present, at most
 * {@link StoreKey#MAX_ID_BYTES} bytes of UTF-8, valid UTF-8 (no lone surrogate and no U+FFFD,
 * which is what an adapter's decoder leaves of invalid bytes), and free of control characters. A key that fails follows the
 * pipeline's policy. Thread-safe.
 */
final class KeyResolver {

    static final String HASH_PREFIX = "sha256:";

    private final IdExtractor[] chain;
    private final MissingIdPolicy policy;

    KeyResolver(List<IdExtractor> chain, MissingIdPolicy policy) {
        this.chain = chain.toArray(new IdExtractor[0]);
        this.policy = policy;
    }

    /**
     * Sets {@code work.key} to the key to claim; leaves it {@code null} for a message to run unprotected,
     * or sets {@code work.rejectCause} and {@code work.rejectDetail} for one to dead-letter.
     */
    void resolve(Work work) {
        InboundMessage message = work.message;
        String key = null;
        String problem = null;
        String cause = "missing-id";
        try {
            for (IdExtractor extractor : chain) {
                key = extractor.extract(message);
                if (key != null && !key.isEmpty()) {
                    break;
                }
            }
            if (key == null || key.isEmpty()) {
                key = null;
                problem = "no idempotency key found by the pipeline's id extractors";
            } else {
                problem = invalidity(key);
                if (problem != null) {
                    cause = "invalid-id";
                }
            }
        } catch (RuntimeException e) {
            cause = "invalid-id";
            problem = "the idempotency key could not be read: " + e.getMessage();
        }
        if (problem == null) {
            work.key = key;
            return;
        }
        switch (policy) {
            case HASH:
                work.key = HASH_PREFIX + Fingerprints.sha256(message.payload());
                break;
            case UNPROTECTED:
                break;
            default:
                work.rejectCause = cause;
                work.rejectDetail = problem;
        }
    }

    /** C0 and C1 controls, DEL, and the Unicode line and paragraph separators. */
    static boolean isControl(char c) {
        return c < 0x20 || (c >= 0x7F && c < 0xA0) || c == '\u2028' || c == '\u2029';
    }

    /** Why a key cannot be stored, or {@code null} if it can. */
    static String invalidity(String key) {
        int length = key.length();
        // Three bytes per char bounds UTF-8 (a surrogate pair is 2 chars for 4 bytes): most keys skip the count.
        boolean mayBeTooLong = length * 3 > StoreKey.MAX_ID_BYTES;
        int bytes = 0;
        for (int i = 0; i < length; i++) {
            char c = key.charAt(i);
            if (isControl(c)) {
                return "the idempotency key holds a control character (" + LogSafe.codePoint(c) + ") at index " + i
                        + "; keys are printable text, and one with a line break could forge log lines";
            }
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c)) {
                if (i + 1 >= length || !Character.isLowSurrogate(key.charAt(i + 1))) {
                    return "the idempotency key is not valid UTF-8 (a lone surrogate at index " + i + ")";
                }
                bytes += 4;
                i++;
            } else if (Character.isLowSurrogate(c)) {
                return "the idempotency key is not valid UTF-8 (a lone surrogate at index " + i + ")";
            } else if (c == '\uFFFD') {
                return "the idempotency key is not valid UTF-8 (it holds U+FFFD, a replaced invalid byte, at index "
                        + i + ")";
            } else {
                bytes += 3;
            }
        }
        if (mayBeTooLong && bytes > StoreKey.MAX_ID_BYTES) {
            return "the idempotency key is " + bytes + " bytes of UTF-8; at most " + StoreKey.MAX_ID_BYTES
                    + " are accepted";
        }
        return null;
    }
}
