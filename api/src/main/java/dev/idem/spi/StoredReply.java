package dev.idem.spi;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The reply a handler sent for a request message, as a {@link ReplyStore} keeps it with the key's completion, so that
 * a duplicate of the request gets it sent again.
 *
 * <p>Immutable: the payload is copied in and out, the headers into an unmodifiable map. Two replies are equal when
 * their payloads hold the same bytes and their headers the same entries.
 *
 * @param payload the reply's body; empty allowed
 * @param headers the reply's headers, names and values as given (neither {@code null}); empty for none
 */
public record StoredReply(byte[] payload, Map<String, String> headers) {

    /**
     * @throws NullPointerException if the payload or the headers, or a header's name or value, is {@code null}
     */
    public StoredReply {
        payload = Objects.requireNonNull(payload, "payload").clone();
        headers = Map.copyOf(Objects.requireNonNull(headers, "headers"));
    }

    /** A reply without headers. */
    public StoredReply(byte[] payload) {
        this(payload, Map.of());
    }

    /** A copy of the payload. */
    @Override
    public byte[] payload() {
        return payload.clone();
    }

    /** The payload's length, without copying it. */
    public int payloadLength() {
        return payload.length;
    }

    /**
     * What the reply weighs against {@link ReplyStore#MAX_REPLY_BYTES}: the payload's bytes plus every header's name
     * and value in bytes of UTF-8 (an unpaired surrogate counted as the three bytes it takes in generalized UTF-8).
     */
    public long size() {
        long bytes = payload.length;
        for (Map.Entry<String, String> header : headers.entrySet()) {
            bytes += utf8Length(header.getKey()) + utf8Length(header.getValue());
        }
        return bytes;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof StoredReply that && Arrays.equals(payload, that.payload)
                && headers.equals(that.headers);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(payload) + headers.hashCode();
    }

    /** The sizes and header names, never the content: a reply may hold personal data. */
    @Override
    public String toString() {
        return "StoredReply[" + payload.length + " bytes, headers " + new TreeSet<>(headers.keySet()) + "]";
    }

    static long utf8Length(String text) {
        long bytes = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x80) {
                bytes++;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }
}
