package dev.idem.store.redis;

import dev.idem.spi.StoreKey;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.codec.CRC16;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;

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
 * the namespace's length keeps namespace and aggregate apart as it does for message keys. A message's durable steps
 * are a hash of their own, {@link #steps}, and the reply stored with its completion a string of its own,
 * {@link #reply}, both on the message key's hash slot.
 *
 * <p>Immutable and thread-safe.
 */
final class RedisKeys {

    /** What follows the prefix in a watermark's key, where a message key has its namespace's length. */
    private static final byte[] WATERMARK = "seq:".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MESSAGE = new byte[0];

    /** What follows the prefix in a steps key, up to its tag. */
    private static final byte[] STEPS = "steps:{".getBytes(StandardCharsets.US_ASCII);

    /** What follows the prefix in a reply key, up to its tag. */
    private static final byte[] REPLY = "reply:{".getBytes(StandardCharsets.US_ASCII);

    /** What follows the prefix in the key of a family of buckets of packed completions, up to its tag. */
    private static final byte[] PACK = "p:{".getBytes(StandardCharsets.US_ASCII);

    private final byte[] prefix;
    private final Companion steps;
    private final Companion reply;
    private final Companion pack;

    RedisKeys(String prefix) {
        this.prefix = utf8(prefix);
        this.steps = new Companion(STEPS);
        this.reply = new Companion(REPLY);
        this.pack = new Companion(PACK);
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

    /**
     * The key of {@code key}'s durable steps, {@code <prefix>steps:{<tag>}:<namespace length>:<namespace>:<id>}: a
     * hash of step names to values. The tag is chosen for the message key's hash slot, so that both sit on one slot
     * and one script reads or writes them together in Cluster mode (see {@link Companion}); on a standalone server it
     * only costs its few bytes. After the prefix a message key starts with a digit, a watermark with {@code seq:}, a
     * steps key with {@code steps:} and a reply key with {@code reply:}, so none is ever read as another.
     */
    byte[] steps(StoreKey key) {
        return steps.of(encode(key));
    }

    /** {@link #steps} of the message key {@code message}, one under this prefix. */
    byte[] stepsOf(byte[] message) {
        return steps.of(message);
    }

    /** Whether {@code key}, one under this prefix, is a steps key rather than a message key. */
    boolean isSteps(byte[] key) {
        return steps.is(key);
    }

    /** Whether the steps key of a message key lies on its slot; false only for a prefix opening with {@code {}}. */
    boolean stepsOnSlot(StoreKey key) {
        return steps.onSlot(encode(key));
    }

    /** {@link #stepsOnSlot(StoreKey)} of the message key {@code message}. */
    boolean stepsOnSlot(byte[] message) {
        return steps.onSlot(message);
    }

    /**
     * The key of the reply stored with {@code key}'s completion, {@code <prefix>reply:{<tag>}:<namespace
     * length>:<namespace>:<id>}: a string, on the message key's slot as a steps key is (see {@link Companion}).
     */
    byte[] reply(StoreKey key) {
        return reply.of(encode(key));
    }

    /** {@link #reply} of the message key {@code message}, one under this prefix. */
    byte[] replyOf(byte[] message) {
        return reply.of(message);
    }

    /** Whether {@code key}, one under this prefix, is a reply key rather than a message key. */
    boolean isReply(byte[] key) {
        return reply.is(key);
    }

    /** Whether the reply key of a message key lies on its slot; false only for a prefix opening with {@code {}}. */
    boolean replyOnSlot(StoreKey key) {
        return reply.onSlot(encode(key));
    }

    /** {@link #replyOnSlot(StoreKey)} of the message key {@code message}. */
    boolean replyOnSlot(byte[] message) {
        return reply.onSlot(message);
    }

    /**
     * The family of buckets where the message key {@code message}, one under this prefix whose ID is {@code id} (its
     * last bytes), may be completed as a packed field: {@code <prefix>p:{<tag>}:<namespace length>:<namespace>:}, on
     * the message key's slot as a steps key is (see {@link Companion}); its buckets are that followed by their number
     * (see {@code record.lua}). So the family key and its buckets share their namespace's part with its message keys,
     * and no bucket of one namespace is ever another namespace's family or bucket.
     */
    byte[] familyOf(byte[] message, byte[] id) {
        byte[] key = pack.of(message);
        return Arrays.copyOf(key, key.length - id.length);
    }

    /**
     * The one family of buckets of the namespace of the message key {@code message} (whose ID is {@code id}), for a
     * standalone server, where a script may touch any key: {@link #familyOf}'s name with the tag {@code 0}, so that a
     * namespace's buckets grow with all its keys rather than with a slot's share of them.
     */
    byte[] namespaceFamilyOf(byte[] message, byte[] id) {
        int namespacePart = message.length - prefix.length - id.length;
        byte[] out = new byte[prefix.length + PACK.length + 3 + namespacePart];
        int at = put(out, 0, prefix);
        at = put(out, at, PACK);
        out[at++] = '0';
        out[at++] = '}';
        out[at++] = ':';
        System.arraycopy(message, prefix.length, out, at, namespacePart);
        return out;
    }

    /**
     * An ID as scripts take it for its packed completion: 4 bytes of its bucket hash, big-endian, then the ID. The
     * hash places the ID in its family's buckets and is kept in the packed value for splits, so it must never change
     * for an ID: CRC-32C of the ID's bytes, then MurmurHash3's finalizer to spread every bit of it into the low ones
     * the buckets take.
     */
    static byte[] hashedField(byte[] id) {
        CRC32C crc = new CRC32C();
        crc.update(id, 0, id.length);
        int h = (int) crc.getValue();
        h ^= h >>> 16;
        h *= 0x85EBCA6B;
        h ^= h >>> 13;
        h *= 0xC2B2AE35;
        h ^= h >>> 16;
        byte[] out = new byte[4 + id.length];
        out[0] = (byte) (h >>> 24);
        out[1] = (byte) (h >>> 16);
        out[2] = (byte) (h >>> 8);
        out[3] = (byte) h;
        System.arraycopy(id, 0, out, 4, id.length);
        return out;
    }

    /**
     * Whether every companion key (steps, reply, family) can lie on its message key's slot: false only when the
     * prefix's first braces are empty ({@code {}}), which makes Redis hash whole keys.
     */
    boolean companionsOnSlot() {
        int open = indexOf(prefix, (byte) '{', 0);
        return open < 0 || open + 1 >= prefix.length || prefix[open + 1] != '}';
    }

    /** Whether {@code key}, one under this prefix, is a family key or a bucket of packed completions. */
    boolean isPacked(byte[] key) {
        return pack.is(key);
    }

    /**
     * A {@code SCAN MATCH} pattern for the buckets (and family keys) of {@code namespace}'s packed completions, whatever
     * their tags: the prefix and {@code p:{}, any tag, then {@code }:} and the namespace's part. A key it matches is one
     * of them only if {@link #isBucketOf} says so.
     */
    byte[] bucketPattern(String namespace) {
        byte[] namespacePart = namespacePart(namespace);
        byte[] head = escaped(concat(prefix, PACK));
        byte[] tail = escaped(concat(new byte[] {'}', ':'}, namespacePart));
        byte[] out = new byte[head.length + 1 + tail.length + 1];
        System.arraycopy(head, 0, out, 0, head.length);
        out[head.length] = '*';
        System.arraycopy(tail, 0, out, head.length + 1, tail.length);
        out[out.length - 1] = '*';
        return out;
    }

    /**
     * Whether {@code key} is a bucket of {@code namespace}'s packed completions: the prefix, {@code p:{}, a tag of
     * base-36 digits, {@code }:}, the namespace's part and a bucket's number (decimal digits).
     */
    boolean isBucketOf(byte[] key, String namespace) {
        byte[] namespacePart = namespacePart(namespace);
        int at = prefix.length + PACK.length;
        if (key.length <= at || !Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length)
                || !Arrays.equals(key, prefix.length, at, PACK, 0, PACK.length)) {
            return false;
        }
        int close = indexOf(key, (byte) '}', at);
        if (close < 0 || close + 2 + namespacePart.length >= key.length || key[close + 1] != ':'
                || !Arrays.equals(key, close + 2, close + 2 + namespacePart.length, namespacePart, 0,
                        namespacePart.length)) {
            return false;
        }
        for (int i = close + 2 + namespacePart.length; i < key.length; i++) {
            if (key[i] < '0' || key[i] > '9') {
                return false;
            }
        }
        return true;
    }

    /** What follows the prefix in every message key of {@code namespace}: its length, the namespace, two colons. */
    private byte[] namespacePart(String namespace) {
        byte[] all = namespacePrefix(namespace);
        return Arrays.copyOfRange(all, prefix.length, all.length);
    }

    private static byte[] escaped(byte[] literal) {
        byte[] pattern = startingWith(literal);
        return Arrays.copyOf(pattern, pattern.length - 1);
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /**
     * A kind of key that goes with a message key and lives on its hash slot: the prefix, the kind (such as
     * {@code steps:} and the tag's opening brace), the tag, a closing brace and a colon, then what follows the prefix
     * in the message key.
     */
    private final class Companion {
        private final byte[] kind;
        /** {@link #tag}'s table, made at the first use; racing threads make the same table. */
        private volatile byte[][] tags;

        Companion(byte[] kind) {
            this.kind = kind;
        }

        /** This kind's key of the message key {@code message}, one under this prefix. */
        byte[] of(byte[] message) {
            byte[] tag = tag(SlotHash.getSlot(message));
            byte[] out = new byte[prefix.length + kind.length + tag.length + 2 + message.length - prefix.length];
            int at = put(out, 0, prefix);
            at = put(out, at, kind);
            at = put(out, at, tag);
            out[at++] = '}';
            out[at++] = ':';
            System.arraycopy(message, prefix.length, out, at, message.length - prefix.length);
            return out;
        }

        /** Whether {@code key}, one under this prefix, is of this kind. */
        boolean is(byte[] key) {
            return key.length >= prefix.length + kind.length
                    && Arrays.equals(key, prefix.length, prefix.length + kind.length, kind, 0, kind.length);
        }

        /** Whether this kind's key of {@code message} lies on its slot. */
        boolean onSlot(byte[] message) {
            return SlotHash.getSlot(message) == SlotHash.getSlot(of(message));
        }

        /**
         * A tag that puts a key of this kind on {@code slot}. Redis hashes what lies between a key's first {@code '{'}
         * and the first {@code '}'} after it, when that is not empty, and the whole key otherwise. So: when the prefix
         * holds a whole tag, message and companion keys share it and any tag will do; when it holds none, the
         * companion's tag is ours alone, and a table gives for each slot a short tag that hashes to it; when the
         * prefix opens a brace it never closes, what Redis hashes is the rest of the prefix, the kind (such as
         * {@code steps:{}) and our tag, and the table is made for that. A prefix whose first braces are empty
         * ({@code {}}) makes Redis hash whole keys: no tag can then choose the slot, and {@link RedisDedupStore}
         * refuses steps and replies in Cluster mode (see {@link #onSlot}).
         */
        private byte[] tag(int slot) {
            byte[][] table = tags;
            if (table == null) {
                table = tags = tagTable(hashedBeforeTag());
            }
            return table.length == 1 ? table[0] : table[slot];
        }

        /**
         * What Redis hashes of a companion key before our tag: empty when the prefix holds no brace; the rest of the
         * prefix and the kind when it opens one it never closes; {@code null} when the prefix decides the slot (or,
         * for {@code {}}, nothing can).
         */
        private byte[] hashedBeforeTag() {
            int open = indexOf(prefix, (byte) '{', 0);
            if (open < 0) {
                return new byte[0];
            }
            if (indexOf(prefix, (byte) '}', open + 1) >= 0) {
                return null;
            }
            byte[] rest = Arrays.copyOfRange(prefix, open + 1, prefix.length);
            byte[] out = Arrays.copyOf(rest, rest.length + kind.length);
            System.arraycopy(kind, 0, out, rest.length, kind.length);
            return out;
        }
    }

    /**
     * For each slot, a short tag that makes {@code before} plus the tag hash to it: base-36 numbers tried in turn
     * until every slot has one (about 170,000 CRC16s, a few milliseconds, once per store and kind). One tag for every
     * slot when {@code before} is {@code null}.
     */
    private static byte[][] tagTable(byte[] before) {
        if (before == null) {
            return new byte[][] {"0".getBytes(StandardCharsets.US_ASCII)};
        }
        byte[][] table = new byte[SlotHash.SLOT_COUNT][];
        int left = table.length;
        byte[] candidate = Arrays.copyOf(before, before.length + 8);
        for (long n = 0; left > 0; n++) {
            byte[] tag = Long.toString(n, 36).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(tag, 0, candidate, before.length, tag.length);
            int slot = CRC16.crc16(candidate, 0, before.length + tag.length) % SlotHash.SLOT_COUNT;
            if (table[slot] == null) {
                table[slot] = tag;
                left--;
            }
        }
        return table;
    }

    private static int indexOf(byte[] bytes, byte b, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == b) {
                return i;
            }
        }
        return -1;
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
