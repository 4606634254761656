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
 * <p>A sequence guard's watermark is its own key, {@code <prefix>seq:<namespace length>:<namespace>:<aggregate>}
 * (e.g. {@code idem:seq:8:payments:account-7}): after the prefix a message key starts with a digit and a watermark
 * with {@code seq:}, so no aggregate's watermark can ever be read as a message key or the other way round, and
 * the namespace's length keeps namespace and aggregate apart as it does for message keys.
 *
 * <p>Immutable and thread-safe.
 */
final class RedisKeys {

    /** What follows the prefix in a watermark's key, where a message key has its namespace's length. */
    private static final byte[] WATERMARK = "seq:".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MESSAGE = new byte[0];

    private final byte[] prefix;

    RedisKeys(String prefix) {
        this.prefix = utf8(prefix);
    }

    byte[] encode(StoreKey key) {
        return encode(MESSAGE, key);
    }

    /** The key of {@code aggregate}'s watermark. */
    byte[] watermark(StoreKey aggregate) {
        return encode(WATERMARK, aggregate);
    }

    /**
     * The bytes every message key of {@code namespace} starts with: the prefix, the namespace's length and the
     * namespace, each followed by its colon. The message's ID follows them.
     */
    byte[] namespacePrefix(String namespace) {
        return encode(MESSAGE, new StoreKey(namespace, ""));
    }

    /**
     * A {@code SCAN MATCH} pattern for every key that starts with {@code literal}: each glob character of it
     * ({@code * ? [ ] \}) escaped with a backslash, then {@code *}. Bytes of a multi-byte UTF-8 character are all
     * above 0x7F, so escaping bytewise never splits one.
     */
    static byte[] startingWith(byte[] literal) {
        byte[] out = new byte[literal.length * 2 + 1];
        int at = 0;
        for (byte b : literal) {
            if (b == '*' || b == '?' || b == '[' || b == ']' || b == '\\') {
                out[at++] = '\\';
            }
            out[at++] = b;
        }
        out[at++] = '*';
        return Arrays.copyOf(out, at);
    }

    /**
     * The text of {@code bytes[from..]}, as {@link #utf8} wrote it: UTF-8, where a lone surrogate has a three-byte
     * sequence of its own (which the JDK's decoder would replace). A byte that starts no valid sequence is read as
     * U+FFFD; the store never writes one.
     */
    static String text(byte[] bytes, int from) {
        StringBuilder out = new StringBuilder(bytes.length - from);
        int i = from;
        while (i < bytes.length) {
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
                out.append((char) b);
                i++;
            } else if (b >= 0xC2 && b < 0xE0 && continuation(bytes, i + 1, 1)) {
                out.append((char) ((b & 0x1F) << 6 | bytes[i + 1] & 0x3F));
                i += 2;
            } else if (b >= 0xE0 && b < 0xF0 && continuation(bytes, i + 1, 2)) {
                int c = (b & 0x0F) << 12 | (bytes[i + 1] & 0x3F) << 6 | bytes[i + 2] & 0x3F;
                if (c < 0x800) {
                    out.append('\uFFFD');
                    i++;
                    continue;
                }
                out.append((char) c);
                i += 3;
            } else if (b >= 0xF0 && b < 0xF5 && continuation(bytes, i + 1, 3)) {
                int c = (b & 0x07) << 18 | (bytes[i + 1] & 0x3F) << 12 | (bytes[i + 2] & 0x3F) << 6 | bytes[i + 3] & 0x3F;
                if (c < 0x10000 || c > Character.MAX_CODE_POINT) {
                    out.append('\uFFFD');
                    i++;
                    continue;
                }
                out.appendCodePoint(c);
                i += 4;
            } else {
                out.append('\uFFFD');
                i++;
            }
        }
        return out.toString();
    }

    private static boolean continuation(byte[] bytes, int from, int count) {
        if (from + count > bytes.length) {
            return false;
        }
        for (int i = from; i < from + count; i++) {
            if ((bytes[i] & 0xC0) != 0x80) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code key}, one under this prefix, is a watermark's rather than a message key's. */
    boolean isWatermark(byte[] key) {
        return key.length >= prefix.length + WATERMARK.length
                && Arrays.equals(key, prefix.length, prefix.length + WATERMARK.length, WATERMARK, 0, WATERMARK.length);
    }

    private byte[] encode(byte[] kind, StoreKey key) {
        byte[] namespace = utf8(key.namespace());
        byte[] id = utf8(key.id());
        byte[] length = Integer.toString(namespace.length).getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[prefix.length + kind.length + length.length + 1 + namespace.length + 1 + id.length];
        int at = put(out, 0, prefix);
        at = put(out, at, kind);
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
