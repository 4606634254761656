package dev.idem.store.redis;

import dev.idem.spi.CompletionRequest;
import dev.idem.spi.StoredReply;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How a {@link RedisDedupStore} writes the reply stored with a completion ({@link dev.idem.spi.ReplyStore}): a string
 * key of its own, {@link RedisKeys#reply}, on the message key's slot, written by the completion's own script
 * ({@code complete_advance.lua}) with the completion's retention as its TTL, and only for a completion that came with
 * a reply, so a key completed without one costs nothing more. Its value is {@code t} and the completion's token in
 * 8 bytes ({@link RedisRecords#token}), then this class's encoding of the reply:
 * <pre>
 * t&lt;token, 8 bytes&gt;&lt;headers length&gt;|&lt;headers&gt;&lt;payload&gt;
 * </pre>
 * (Beside a completed record in the earlier, textual form, {@code D|...}, the reply written with it starts with the
 * token in decimal and a {@code |}; {@code reply.lua} reads either, by the record's form.)
 * {@code <headers length>} is the decimal length in bytes of {@code <headers>}, which is, for each header in the order
 * of their names, {@code <name length>:<name><value length>:<value>}, lengths in decimal bytes, names and values as
 * UTF-8 ({@link RedisKeys#utf8}, so any Java string comes back as written); the payload's raw bytes follow. The token
 * ties the reply to its completion: {@code reply.lua} answers it only while the message key is completed with that
 * token, so a reply of the key's earlier life, left to run out by its TTL, never shows.
 *
 * <p>Stateless.
 */
final class RedisReplies {

    private RedisReplies() {
    }

    /** Whether any request of the batch stores a reply, so that the batch needs {@code complete_advance.lua}. */
    static boolean anyReply(List<CompletionRequest> requests) {
        for (CompletionRequest request : requests) {
            if (request.reply() != null) {
                return true;
            }
        }
        return false;
    }

    /** The reply as it follows the token in the reply key's value. */
    static byte[] encode(StoredReply reply) {
        ByteArrayOutputStream headers = new ByteArrayOutputStream();
        for (Map.Entry<String, String> header : new TreeMap<>(reply.headers()).entrySet()) {
            field(headers, RedisKeys.utf8(header.getKey()));
            field(headers, RedisKeys.utf8(header.getValue()));
        }
        byte[] length = (headers.size() + "|").getBytes(StandardCharsets.US_ASCII);
        byte[] payload = reply.payload();
        ByteArrayOutputStream out = new ByteArrayOutputStream(length.length + headers.size() + payload.length);
        out.writeBytes(length);
        out.writeBytes(headers.toByteArray());
        out.writeBytes(payload);
        return out.toByteArray();
    }

    private static void field(ByteArrayOutputStream out, byte[] bytes) {
        out.writeBytes((bytes.length + ":").getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(bytes);
    }

    /**
     * The reply {@link #encode} wrote.
     *
     * @throws IllegalArgumentException when {@code value} is not such an encoding
     */
    static StoredReply decode(byte[] value) {
        Reader in = new Reader(value);
        int headersEnd = in.number('|');
        headersEnd += in.at;
        if (headersEnd > value.length) {
            throw new IllegalArgumentException("headers run past the value's end");
        }
        Map<String, String> headers = new HashMap<>();
        while (in.at < headersEnd) {
            String name = in.text(headersEnd);
            String headerValue = in.text(headersEnd);
            if (headers.put(name, headerValue) != null) {
                throw new IllegalArgumentException("header '" + name + "' twice");
            }
        }
        return new StoredReply(Arrays.copyOfRange(value, headersEnd, value.length), headers);
    }

    private static final class Reader {
        private final byte[] bytes;
        int at;

        Reader(byte[] bytes) {
            this.bytes = bytes;
        }

        /** A decimal number ended by {@code end}, which is read too. */
        int number(char end) {
            long n = 0;
            int start = at;
            while (at < bytes.length && bytes[at] != end) {
                int digit = bytes[at] - '0';
                if (digit < 0 || digit > 9 || at - start >= 9) {
                    throw new IllegalArgumentException("not a length at byte " + at);
                }
                n = n * 10 + digit;
                at++;
            }
            if (at == start || at == bytes.length) {
                throw new IllegalArgumentException("no length at byte " + start);
            }
            at++;
            return (int) n;
        }

        /** A length-prefixed text field that ends at or before {@code limit}. */
        String text(int limit) {
            int length = number(':');
            if (length > limit - at) {
                throw new IllegalArgumentException("a header runs past the headers' end at byte " + at);
            }
            String text = RedisKeys.text(Arrays.copyOfRange(bytes, at, at + length), 0);
            at += length;
            return text;
        }
    }
}
