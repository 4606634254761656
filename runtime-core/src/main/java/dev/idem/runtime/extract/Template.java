package dev.idem.runtime.extract;

import dev.idem.spi.InboundMessage;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A parsed key template such as {@code order-{/orderId}-{/lineNo}} or {@code {header:tenant}:{/orderId}}:
 * literal text around fields. <code>{{</code> and <code>}}</code> are literal braces. Immutable.
 *
 * @param literals the text before each field, and after the last: one more than {@code fields}
 * @param fields the fields in order
 * @param pointers the distinct JSON pointers the fields use, indexed by {@link Pointed#slot()}
 */
record Template(List<String> literals, List<Field> fields, List<Pointer> pointers) {

    static final String PLACEHOLDERS = "{/json/pointer}, {header:name}, {key}, {source}, {partition} or {broker-id}";

    /** One field of a template. */
    sealed interface Field permits Pointed, Header, Attribute {
    }

    /** A value in the payload; {@code slot} indexes {@link Template#pointers()}. */
    record Pointed(int slot) implements Field {
    }

    /** A header's value. */
    record Header(String name) implements Field {
    }

    /** One of the message's own attributes. */
    enum Attribute implements Field {
        KEY("key"), SOURCE("source"), PARTITION("partition"), BROKER_ID("broker-id");

        private final String placeholder;

        Attribute(String placeholder) {
            this.placeholder = placeholder;
        }

        String read(InboundMessage message) {
            switch (this) {
                case KEY: return message.key();
                case SOURCE: return message.source();
                case PARTITION: return message.partition();
                default: return message.brokerMessageId();
            }
        }
    }

    /**
     * @throws IllegalArgumentException saying what is wrong and where, completing
     *         "Invalid value '...' for ...template: "
     */
    static Template parse(String text) {
        List<String> literals = new ArrayList<>();
        List<Field> fields = new ArrayList<>();
        Map<String, Pointed> slots = new LinkedHashMap<>();
        List<Pointer> pointers = new ArrayList<>();
        StringBuilder literal = new StringBuilder();
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            char next = i + 1 < text.length() ? text.charAt(i + 1) : 0;
            if ((c == '{' || c == '}') && next == c) {
                literal.append(c);
                i += 2;
            } else if (c == '}') {
                throw new IllegalArgumentException("unmatched '}' at character " + (i + 1)
                        + "; write '}}' for a literal '}'");
            } else if (c == '{') {
                int close = text.indexOf('}', i + 1);
                if (close < 0) {
                    throw new IllegalArgumentException("unclosed '{' at character " + (i + 1)
                            + "; close it with '}' or write '{{' for a literal '{'");
                }
                int nested = text.indexOf('{', i + 1);
                if (nested >= 0 && nested < close) {
                    throw new IllegalArgumentException("'{' at character " + (nested + 1)
                            + " inside the placeholder opened at character " + (i + 1) + "; is a '}' missing?");
                }
                literals.add(literal.toString());
                literal.setLength(0);
                fields.add(field(text.substring(i + 1, close), i + 1, slots, pointers));
                i = close + 1;
            } else {
                literal.append(c);
                i++;
            }
        }
        if (fields.isEmpty()) {
            throw new IllegalArgumentException("has no placeholder, so every message would get the same key;"
                    + " use at least one of " + PLACEHOLDERS);
        }
        literals.add(literal.toString());
        return new Template(List.copyOf(literals), List.copyOf(fields), List.copyOf(pointers));
    }

    private static Field field(String placeholder, int at, Map<String, Pointed> slots, List<Pointer> pointers) {
        String where = "placeholder '{" + placeholder + "}' at character " + at;
        if (placeholder.startsWith("/")) {
            Pointed known = slots.get(placeholder);
            if (known != null) {
                // One slot per distinct pointer: {/id}-{/id} looks /id up once.
                return known;
            }
            try {
                pointers.add(Pointer.parse(placeholder));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + " " + e.getMessage(), e);
            }
            Pointed pointed = new Pointed(pointers.size() - 1);
            slots.put(placeholder, pointed);
            return pointed;
        }
        if (placeholder.startsWith("header:")) {
            String name = placeholder.substring("header:".length());
            if (name.isBlank()) {
                throw new IllegalArgumentException(where + " names no header; write {header:tenant}");
            }
            return new Header(name);
        }
        for (Attribute attribute : Attribute.values()) {
            if (attribute.placeholder.equals(placeholder)) {
                return attribute;
            }
        }
        String hint = placeholder.matches("[A-Za-z_][A-Za-z0-9_-]*")
                ? " (a payload field is {/" + placeholder + "})" : "";
        throw new IllegalArgumentException("unknown " + where + hint + "; use " + PLACEHOLDERS);
    }
}
