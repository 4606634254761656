package dev.idem.examples.orders;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A strict parser for one flat JSON object whose values are all strings, such as
 * {@code {"orderId":"o-17","event":"paid","amount":"12.50"}}: just enough JSON for the example's events,
 * so the handler JAR needs no JSON library. Anything else (nested values, numbers, duplicate names,
 * trailing text) is rejected with the position and what was expected.
 *
 * <p>Stateless; safe from any thread.
 */
final class FlatJson {

    private final String text;
    private int pos;

    private FlatJson(String text) {
        this.text = text;
    }

    /**
     * Parses {@code text} as one JSON object of string values.
     *
     * @return the members in document order
     * @throws IllegalArgumentException naming what is wrong and where
     */
    static Map<String, String> parseObject(String text) {
        return new FlatJson(text).object();
    }

    private Map<String, String> object() {
        skipWhitespace();
        if (atEnd()) {
            throw problem("the payload is empty; expected a JSON object");
        }
        expect('{', "a JSON object starting with '{'");
        Map<String, String> members = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            pos++;
        } else {
            while (true) {
                skipWhitespace();
                String name = string("a member name in double quotes");
                skipWhitespace();
                expect(':', "':' after \"" + name + "\"");
                skipWhitespace();
                if (peek() != '"') {
                    throw problem("the value of \"" + name + "\" must be a JSON string, found "
                            + describe(peek()));
                }
                String value = string("a string value");
                if (members.putIfAbsent(name, value) != null) {
                    throw problem("duplicate member \"" + name + "\"");
                }
                skipWhitespace();
                if (peek() == ',') {
                    pos++;
                } else {
                    expect('}', "',' or '}' after the value of \"" + name + "\"");
                    break;
                }
            }
        }
        skipWhitespace();
        if (!atEnd()) {
            throw problem("unexpected " + describe(peek()) + " after the object");
        }
        return members;
    }

    private String string(String what) {
        expect('"', what);
        StringBuilder out = new StringBuilder();
        while (true) {
            if (atEnd()) {
                throw problem("unterminated string");
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                throw problem("unescaped control character U+" + String.format("%04X", (int) c) + " in a string");
            }
            out.append(c == '\\' ? escape() : c);
        }
    }

    private char escape() {
        if (atEnd()) {
            throw problem("unterminated escape");
        }
        char c = text.charAt(pos++);
        return switch (c) {
            case '"', '\\', '/' -> c;
            case 'b' -> '\b';
            case 'f' -> '\f';
            case 'n' -> '\n';
            case 'r' -> '\r';
            case 't' -> '\t';
            case 'u' -> unicode();
            default -> throw problem("invalid escape \\" + c);
        };
    }

    private char unicode() {
        if (pos + 4 > text.length()) {
            throw problem("incomplete \\u escape");
        }
        int value = 0;
        for (int i = 0; i < 4; i++) {
            int digit = Character.digit(text.charAt(pos++), 16);
            if (digit < 0) {
                throw problem("invalid \\u escape");
            }
            value = value * 16 + digit;
        }
        return (char) value;
    }

    private void expect(char c, String what) {
        if (peek() != c) {
            throw problem("expected " + what + ", found " + describe(peek()));
        }
        pos++;
    }

    private void skipWhitespace() {
        while (!atEnd() && " \t\n\r".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
    }

    private boolean atEnd() {
        return pos >= text.length();
    }

    /** The next character, or {@code 0} at the end (never valid where a character is expected). */
    private char peek() {
        return atEnd() ? 0 : text.charAt(pos);
    }

    private String describe(char c) {
        return atEnd() ? "the end of the payload" : "'" + c + "'";
    }

    private IllegalArgumentException problem(String message) {
        return new IllegalArgumentException(message + " (at character " + pos + ")");
    }
}
