package dev.idem.store.jdbc;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The outbox's {@code headers} column: a message's headers as a JSON object of strings, written in pure
 * ASCII. Every character outside printable ASCII, and every quote and backslash, is escaped ({@code \n}, or a
 * backslash, {@code u} and four hex digits per UTF-16 unit), so the text survives any column character set and
 * any database's rules for text (PostgreSQL's refuses NUL), and decodes to exactly the strings written, an
 * unpaired surrogate included. Keys are written sorted, so equal headers make equal text.
 *
 * <p>JSON rather than a format of our own so that an operator can read a waiting row, and query it
 * ({@code CAST(headers AS jsonb)} on PostgreSQL); written here because the plugin ships no JSON library, and
 * only this one shape is needed. Stateless.
 */
final class HeaderCodec {

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private HeaderCodec() {
    }

    /** The headers as ASCII JSON, keys sorted; {@code {}} for none. */
    static String encode(Map<String, String> headers) {
        StringBuilder json = new StringBuilder(16 + headers.size() * 32).append('{');
        boolean first = true;
        for (Map.Entry<String, String> header : new TreeMap<>(headers).entrySet()) {
            if (!first) {
                json.append(',');
            }
            first = false;
            string(json, header.getKey());
            json.append(':');
            string(json, header.getValue());
        }
        return json.append('}').toString();
    }

    private static void string(StringBuilder json, String value) {
        json.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                case '\b' -> json.append("\\b");
                case '\f' -> json.append("\\f");
                default -> {
                    if (c >= 0x20 && c < 0x7f) {
                        json.append(c);
                    } else {
                        json.append("\\u").append(HEX[c >> 12]).append(HEX[(c >> 8) & 0xf]).append(HEX[(c >> 4) & 0xf])
                                .append(HEX[c & 0xf]);
                    }
                }
            }
        }
        json.append('"');
    }

    /**
     * The headers {@code json} holds: any JSON object whose values are all strings, as {@link #encode} writes
     * it or as a person may have.
     *
     * @throws IllegalArgumentException naming the position, when it is not such an object or names a key twice
     */
    static Map<String, String> decode(String json) {
        return new Reader(json).object();
    }

    /** A strict reader of one JSON object of strings. */
    private static final class Reader {

        private final String text;
        private int at;

        Reader(String text) {
            this.text = text;
        }

        Map<String, String> object() {
            Map<String, String> headers = new LinkedHashMap<>();
            skipSpace();
            expect('{');
            skipSpace();
            if (peek() == '}') {
                at++;
            } else {
                while (true) {
                    skipSpace();
                    String key = string();
                    skipSpace();
                    expect(':');
                    skipSpace();
                    String value = string();
                    if (headers.putIfAbsent(key, value) != null) {
                        throw problem("the key \"" + key + "\" appears twice");
                    }
                    skipSpace();
                    char next = next();
                    if (next == '}') {
                        break;
                    }
                    if (next != ',') {
                        at--;
                        throw problem("expected ',' or '}'");
                    }
                }
            }
            skipSpace();
            if (at < text.length()) {
                throw problem("unexpected text after the object");
            }
            return headers;
        }

        private String string() {
            expect('"');
            StringBuilder value = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') {
                    return value.toString();
                }
                if (c < 0x20) {
                    at--;
                    throw problem("a control character must be escaped");
                }
                if (c != '\\') {
                    value.append(c);
                    continue;
                }
                char escape = next();
                switch (escape) {
                    case '"', '\\', '/' -> value.append(escape);
                    case 'n' -> value.append('\n');
                    case 'r' -> value.append('\r');
                    case 't' -> value.append('\t');
                    case 'b' -> value.append('\b');
                    case 'f' -> value.append('\f');
                    case 'u' -> value.append(unit());
                    default -> {
                        at--;
                        throw problem("unknown escape \\" + escape);
                    }
                }
            }
        }

        private char unit() {
            if (at + 4 > text.length()) {
                throw problem("a \\u escape needs four hex digits");
            }
            int unit = 0;
            for (int i = 0; i < 4; i++) {
                int digit = Character.digit(text.charAt(at + i), 16);
                if (digit < 0) {
                    throw problem("a \\u escape needs four hex digits");
                }
                unit = unit << 4 | digit;
            }
            at += 4;
            return (char) unit;
        }

        private void skipSpace() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
                at++;
            }
        }

        private char peek() {
            if (at >= text.length()) {
                throw problem("the text ends early");
            }
            return text.charAt(at);
        }

        private char next() {
            char c = peek();
            at++;
            return c;
        }

        private void expect(char expected) {
            if (peek() != expected) {
                throw problem("expected '" + expected + "'");
            }
            at++;
        }

        private IllegalArgumentException problem(String what) {
            return new IllegalArgumentException("Not a JSON object of strings at character " + at + ": " + what);
        }
    }
}
