package dev.idem.store.redis;

import java.util.Arrays;
import java.util.Base64;

/**
 * The parts of a record ({@code record.lua} describes the format) that the client encodes for the scripts or
 * decodes from their replies: the fingerprint as a record holds it, and a token's 8-byte form.
 *
 * <p>A fingerprint the runtime computes, the unpadded base64url text of a SHA-256 (43 characters), is held as
 * {@code #} and its 32 raw bytes: 33 bytes instead of 44, which brings a completed record under the 44 bytes Redis
 * embeds in the key's object. Any other fingerprint is held as {@code =} and its text ({@link RedisKeys#utf8}), as
 * every fingerprint was by earlier versions of the store; so the same fingerprint may be held in either form, and
 * a claim sends both ({@link #legacy}) to compare with a completed record of either age. Only the canonical text of
 * 32 bytes (the one {@link Base64} writes, its last character's unused bits zero) takes the raw form, so decoding
 * gives back exactly the text that was given.
 *
 * <p>Stateless.
 */
final class RedisRecords {

    private static final byte[] NONE = new byte[0];
    private static final int RAW_LENGTH = 32;
    private static final int TEXT_LENGTH = 43;
    private static final Base64.Encoder BASE64URL = Base64.getUrlEncoder().withoutPadding();

    private RedisRecords() {
    }

    /** {@code fingerprint} ({@code null} for none) as a record written now holds it. */
    static byte[] fingerprint(String fingerprint) {
        if (fingerprint == null) {
            return NONE;
        }
        byte[] raw = raw(fingerprint);
        if (raw == null) {
            return legacy(fingerprint);
        }
        byte[] out = new byte[1 + RAW_LENGTH];
        out[0] = '#';
        System.arraycopy(raw, 0, out, 1, RAW_LENGTH);
        return out;
    }

    /** {@code fingerprint} ({@code null} for none) as records of earlier versions hold it: {@code =} and its text. */
    static byte[] legacy(String fingerprint) {
        return fingerprint == null ? NONE : RedisKeys.utf8("=" + fingerprint);
    }

    /**
     * The fingerprint a record holds as {@code stored}, as it was given: {@code null} for none.
     *
     * @throws IllegalArgumentException when {@code stored} is in neither form
     */
    static String fingerprint(byte[] stored) {
        if (stored.length == 0) {
            return null;
        }
        if (stored[0] == '=') {
            return RedisKeys.text(stored, 1);
        }
        if (stored[0] == '#' && stored.length == 1 + RAW_LENGTH) {
            return BASE64URL.encodeToString(Arrays.copyOfRange(stored, 1, stored.length));
        }
        throw new IllegalArgumentException("not a fingerprint as a record holds it");
    }

    /** The 32 bytes {@code fingerprint} is the canonical unpadded base64url text of, or {@code null}. */
    private static byte[] raw(String fingerprint) {
        if (fingerprint.length() != TEXT_LENGTH) {
            return null;
        }
        for (int i = 0; i < TEXT_LENGTH; i++) {
            char c = fingerprint.charAt(i);
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')) {
                return null;
            }
        }
        byte[] raw = Base64.getUrlDecoder().decode(fingerprint);
        // Base64's decoder ignores the unused low bits of the last character: only the text it would write itself
        // comes back as it was.
        return raw.length == RAW_LENGTH && BASE64URL.encodeToString(raw).equals(fingerprint) ? raw : null;
    }

    /** {@code token} in 8 bytes, big-endian: how a completed record and its reply hold it. */
    static byte[] token(long token) {
        byte[] out = new byte[8];
        for (int i = 7; i >= 0; i--) {
            out[i] = (byte) token;
            token >>>= 8;
        }
        return out;
    }

    /** Whether {@code value} is a completed record in the form written now ({@code d...}). */
    static boolean compactCompleted(byte[] value) {
        return value.length > 9 && value[0] == 'd' && value[9] >= '0' && value[9] <= '9';
    }
}
