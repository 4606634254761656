package dev.idem.store.redis;

import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Turns {@link StoreKey}s into Redis keys: {@code <prefix><namespace length>:<namespace>:<id>}, e.g.
 * {@code idem:8:payments:order-42}. The length, in bytes, makes the encoding injective whatever the
 * namespace holds ({@code 3:a:b:c} is namespace {@code a:b}, id {@code c}); the second colon is only there
 * for people reading keys in {@code redis-cli}.
 *
 * <p>Text is written as UTF-8 and compared byte for byte, so keys differing in case, spaces or Unicode
 * normalisation stay distinct. A Java string holding a lone surrogate (not valid Unicode, but possible)
 * is written as generalized UTF-8 (the surrogate as its own three-byte sequence) instead of the
 * {@code ?} the JDK's encoder substitutes, so two such strings never collapse into one key.
 *
 * <p>Immutable and thread-safe.
 */
final class RedisKeys {

    private final byte[] prefix;

    RedisKeys(String prefix) {
        this.prefix = utf8(prefix);
    }

    byte[] encode(StoreKey key) {
        byte[] namespace = utf8(key.namespace());
        byte[] id = utf8(key.id());
        byte[] length = Integer.toString(namespace.length).getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[prefix.length + length.length + 1 + namespace.length + 1 + id.length];
        int at = put(out, 0, prefix);
        at = put(out, at, length);
        out[at++] = ':';
        at = put(out, at, namespace);
        out[at++] = ':';
        put(out, at, id);
        return out;
    }

    private static int put(byte[] out, int at, byte[] part) {
        System.arraycopy(part, 0, out, at, part.length);
        return at + part.length;
    }

    /** UTF-8, with lone surrogates encoded on their own rather than replaced (generalized UTF-8). */
    static byte[] utf8(String text) {
        int length = text.length();
        byte[] out = new byte[length * 3];
        int at = 0;
        for (int i = 0; i < length; i++) {
            char c = text.charAt(i);
            if (c < 0x80) {
                out[at++] = (byte) c;
            } else if (c < 0x800) {
                out[at++] = (byte) (0xC0 | c >> 6);
                out[at++] = (byte) (0x80 | c & 0x3F);
            } else if (Character.isHighSurrogate(c) && i + 1 < length && Character.isLowSurrogate(text.charAt(i + 1))) {
                int codePoint = Character.toCodePoint(c, text.charAt(++i));
                out[at++] = (byte) (0xF0 | codePoint >> 18);
                out[at++] = (byte) (0x80 | codePoint >> 12 & 0x3F);
                out[at++] = (byte) (0x80 | codePoint >> 6 & 0x3F);
                out[at++] = (byte) (0x80 | codePoint & 0x3F);
            } else {
                out[at++] = (byte) (0xE0 | c >> 12);
                out[at++] = (byte) (0x80 | c >> 6 & 0x3F);
                out[at++] = (byte) (0x80 | c & 0x3F);
            }
        }
        return Arrays.copyOf(out, at);
    }
}
