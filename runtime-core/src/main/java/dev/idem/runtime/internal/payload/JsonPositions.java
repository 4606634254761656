package dev.idem.runtime.internal.payload;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Where a problem is in a payload, said without its content: a JSON path built from property names and indices
 * ({@code $.items[2].sku}), and the line and column of a byte offset, in characters. Also finds where the value at a
 * path starts, for problems found on a tree (a schema's), which has no positions. Used when a payload was refused,
 * never on the way of one that reads. Stateless; thread-safe.
 */
final class JsonPositions {

    /** A property name written after a dot; any other is written in brackets and quotes. */
    private static final Pattern PLAIN_NAME = Pattern.compile("[A-Za-z_$][A-Za-z0-9_$]*");

    /** A path longer than this is cut, so that a payload's long names cannot flood a log line. */
    static final int MAX_PATH_LENGTH = 300;

    /** A plain parser: the payload was refused already, finding a position must not refuse it again. */
    private static final JsonFactory LOCATOR = JsonFactory.builder().build();

    private JsonPositions() {
    }

    /** A line and a column, both from 1. */
    record Position(int line, int column) {
        static final Position UNKNOWN = new Position(0, 0);
    }

    /**
     * The JSON path of {@code segments}, each a property name ({@link String}) or an array index ({@link Integer}),
     * from the root: {@code $}, {@code $.order.items[2]}, {@code $['first name']}.
     */
    static String path(List<Object> segments) {
        StringBuilder s = new StringBuilder("$");
        for (Object segment : segments) {
            if (segment instanceof Integer index) {
                s.append('[').append(index).append(']');
            } else {
                String name = String.valueOf(segment);
                if (PLAIN_NAME.matcher(name).matches()) {
                    s.append('.').append(name);
                } else {
                    s.append("['").append(name.replace("\\", "\\\\").replace("'", "\\'")).append("']");
                }
            }
            if (s.length() > MAX_PATH_LENGTH) {
                return s.substring(0, MAX_PATH_LENGTH) + "...";
            }
        }
        return s.toString();
    }

    /**
     * The line and column of {@code byteOffset} in {@code payload}, counting lines as JSON parsers do ({@code \n},
     * {@code \r} or {@code \r\n} ends one) and columns in characters (code points), so that a payload with accents
     * or emoji is told right; {@link Position#UNKNOWN} for an offset outside it.
     */
    static Position position(byte[] payload, long byteOffset) {
        if (byteOffset < 0 || byteOffset > payload.length) {
            return Position.UNKNOWN;
        }
        int line = 1;
        int column = 1;
        for (int i = 0; i < byteOffset; i++) {
            byte b = payload[i];
            if (b == '\n' || (b == '\r' && (i + 1 >= payload.length || payload[i + 1] != '\n'))) {
                line++;
                column = 1;
            } else if ((b & 0xC0) != 0x80 && b != '\r') {
                // A byte that starts a character (not a UTF-8 continuation byte) moves to the next column.
                column++;
            }
        }
        return new Position(line, column);
    }

    /** The offset of the first byte of {@code payload} that starts no UTF-8 character, or -1 if it is all UTF-8. */
    static long firstMalformedUtf8(byte[] payload) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(payload);
        CharBuffer out = CharBuffer.allocate(4096);
        while (true) {
            CoderResult result = decoder.decode(in, out, true);
            if (result.isError()) {
                return in.position();
            }
            if (result.isUnderflow()) {
                return -1;
            }
            out.clear();
        }
    }

    /**
     * Where the property name that ends before {@code offset} starts (its opening quote), for a parser that stopped
     * just after it; {@code offset} itself when no name ends there.
     */
    static long nameStart(byte[] payload, long offset) {
        int i = (int) Math.min(offset, payload.length) - 1;
        while (i >= 0 && (payload[i] == ' ' || payload[i] == '\t' || payload[i] == '\n' || payload[i] == '\r'
                || payload[i] == ':')) {
            i--;
        }
        if (i < 0 || payload[i] != '"') {
            return offset;
        }
        for (int j = i - 1; j >= 0; j--) {
            if (payload[j] == '"') {
                int backslashes = 0;
                for (int k = j - 1; k >= 0 && payload[k] == '\\'; k--) {
                    backslashes++;
                }
                if (backslashes % 2 == 0) {
                    return j;
                }
            }
        }
        return offset;
    }

    /** Where the value at {@code segments} starts, and what it is. */
    record Found(long byteOffset, JsonToken token) {
        static final Found NOTHING = new Found(-1, null);
    }

    /**
     * Finds the value at {@code segments} by reading the payload as far as needed, skipping what lies beside the
     * path; {@link Found#NOTHING} when the path is not in the payload (a missing property) or the payload is not
     * JSON up to there.
     */
    static Found find(byte[] payload, List<Object> segments) {
        try (JsonParser p = LOCATOR.createParser(payload)) {
            JsonToken token = p.nextToken();
            for (Object segment : segments) {
                if (segment instanceof Integer index && token == JsonToken.START_ARRAY) {
                    token = element(p, index);
                } else if (!(segment instanceof Integer) && token == JsonToken.START_OBJECT) {
                    token = member(p, String.valueOf(segment));
                } else {
                    return Found.NOTHING;
                }
                if (token == null) {
                    return Found.NOTHING;
                }
            }
            return token == null ? Found.NOTHING : new Found(p.currentTokenLocation().getByteOffset(), token);
        } catch (IOException | RuntimeException e) {
            return Found.NOTHING;
        }
    }

    /** The first token of the {@code index}th element of the array just started; {@code null} if it has fewer. */
    private static JsonToken element(JsonParser p, int index) throws IOException {
        for (int i = 0;; i++) {
            JsonToken token = p.nextToken();
            if (token == null || token == JsonToken.END_ARRAY) {
                return null;
            }
            if (i == index) {
                return token;
            }
            p.skipChildren();
        }
    }

    /** The first token of the value of member {@code name} of the object just started; {@code null} if none. */
    private static JsonToken member(JsonParser p, String name) throws IOException {
        while (true) {
            JsonToken token = p.nextToken();
            if (token != JsonToken.FIELD_NAME) {
                return null;
            }
            boolean match = name.equals(p.currentName());
            token = p.nextToken();
            if (match) {
                return token;
            }
            p.skipChildren();
        }
    }

    /** What a token starts, as a person reads it: {@code a string}, {@code an object}, {@code null}. */
    static String describe(JsonToken token) {
        if (token == null) {
            return "nothing";
        }
        return switch (token) {
            case START_OBJECT -> "an object";
            case START_ARRAY -> "an array";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT -> "an integer";
            case VALUE_NUMBER_FLOAT -> "a decimal number";
            case VALUE_TRUE, VALUE_FALSE -> "a boolean";
            case VALUE_NULL -> "null";
            default -> "nothing";
        };
    }
}
