package dev.idem.adapter.activemq;

import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A {@link MapMessage}'s body as a JSON object, UTF-8: one member per map entry, in the order of the names
 * (sorted, so that one map always gives the same bytes, whatever order it was filled in). Strings and
 * characters are strings, booleans are booleans, integral numbers are numbers, floating-point numbers are
 * numbers in their shortest exact form except NaN and the infinities, which JSON has no numbers for and which
 * are the strings {@code "NaN"}, {@code "Infinity"} and {@code "-Infinity"}; a {@code byte[]} is a base64
 * string (RFC 4648, with padding); a null value is {@code null}; the nested maps and lists ActiveMQ allows are
 * objects and arrays. Stateless.
 */
final class MapMessageJson {

    private MapMessageJson() {
    }

    static byte[] toJson(MapMessage m) throws JMSException {
        Map<String, Object> entries = new TreeMap<>();
        for (Enumeration<?> names = m.getMapNames(); names.hasMoreElements(); ) {
            String name = (String) names.nextElement();
            entries.put(name, m.getObject(name));
        }
        StringBuilder out = new StringBuilder();
        write(out, entries);
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof Boolean || value instanceof Byte || value instanceof Short
                || value instanceof Integer || value instanceof Long) {
            out.append(value);
        } else if (value instanceof Float f) {
            number(out, f.isNaN() || f.isInfinite(), Float.toString(f));
        } else if (value instanceof Double d) {
            number(out, d.isNaN() || d.isInfinite(), Double.toString(d));
        } else if (value instanceof byte[] bytes) {
            string(out, Base64.getEncoder().encodeToString(bytes));
        } else if (value instanceof Map<?, ?> map) {
            Map<String, Object> sorted = new TreeMap<>();
            map.forEach((k, v) -> sorted.put(String.valueOf(k), v));
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : sorted.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(out, e.getKey());
                out.append(':');
                write(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(out, list.get(i));
            }
            out.append(']');
        } else {
            // String, Character, and the client's own string buffers (UTF8Buffer) in nested maps.
            string(out, value.toString());
        }
    }

    private static void number(StringBuilder out, boolean notANumber, String text) {
        if (notANumber) {
            string(out, text);
        } else {
            out.append(text);
        }
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
