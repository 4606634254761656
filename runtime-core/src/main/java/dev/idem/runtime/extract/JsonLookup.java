package dev.idem.runtime.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Finds the values at one or more JSON pointers in a UTF-8 JSON payload, in a single streaming pass
 * over the payload's top-level value that skips (without decoding) everything no pointer leads into.
 * No tree is built: the pipeline calls this for every message.
 *
 * <p>Values come back as text: strings as they are, numbers and booleans as written in the payload
 * ({@code 1.50} stays {@code 1.50}), objects and arrays as compact JSON. A missing value or a JSON
 * {@code null} is {@code null}.
 *
 * <p>A payload in which an object on a pointer's path repeats the name the pointer follows
 * (<code>{"orderId":"a","orderId":"b"}</code> for {@code /orderId}), or in which the value read holds
 * an object that repeats a name, is refused: JSON parsers disagree on which of the values counts (Jackson's
 * default keeps the last, others the first or fail), so the key would depend on the reader, and two messages
 * a handler reads as the same business ID could get different keys. That is why the pass reads to the end of
 * the top-level value rather than stopping at the last value it needs; a payload broken after it is refused too.
 * Names repeated elsewhere (in an object no pointer goes through) do not matter to the key and are left alone.
 *
 * <p>Immutable and thread-safe.
 */
final class JsonLookup {

    private static final JsonFactory JSON = JsonFactory.builder()
            // Parse errors end up in logs and dead-letter reasons: keep payload text out of them.
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .build();

    /** Checks the objects inside a value read whole (compact JSON this class wrote) for a repeated name. */
    private static final JsonFactory STRICT = JsonFactory.builder()
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** A step of the pointers: where each resolves ({@code slot}) and what lies below it. */
    private static final class Node {
        final Map<String, Node> byName = new HashMap<>();
        final Map<Integer, Node> byIndex = new HashMap<>();
        /** The pointer to this step, for messages: {@code ""} for the payload itself. */
        final String pointer;
        int slot = -1;

        Node(String pointer) {
            this.pointer = pointer;
        }

        Node child(String token) {
            Node child = byName.computeIfAbsent(token,
                    t -> new Node(pointer + "/" + t.replace("~", "~0").replace("/", "~1")));
            int index = Pointer.arrayIndex(token);
            if (index >= 0) {
                byIndex.put(index, child);
            }
            return child;
        }

        boolean hasChildren() {
            return !byName.isEmpty();
        }
    }

    private final Node root = new Node("");
    private final int slots;

    /** @param pointers distinct pointers; {@link #find} answers in this order */
    JsonLookup(List<Pointer> pointers) {
        for (int slot = 0; slot < pointers.size(); slot++) {
            Node node = root;
            for (String token : pointers.get(slot).tokens()) {
                node = node.child(token);
            }
            node.slot = slot;
        }
        this.slots = pointers.size();
    }

    /**
     * @return the value at each pointer, in the constructor's order; {@code null} where missing
     * @throws IllegalArgumentException if the payload is not UTF-8 JSON (as far as it was read)
     */
    String[] find(byte[] payload) {
        requireUtf8(payload);
        Walk walk = new Walk();
        try (JsonParser parser = JSON.createParser(payload)) {
            if (parser.nextToken() == null) {
                throw new IllegalArgumentException("Payload is not JSON: it is empty");
            }
            walk.value(parser, root);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("Payload is not valid JSON: " + e.getOriginalMessage()
                    + at(e.getLocation()), e);
        } catch (IOException e) {
            // Cannot happen reading a byte array; any other I/O failure would be a Jackson bug.
            throw new UncheckedIOException(e);
        }
        return walk.values;
    }

    /**
     * Jackson would detect UTF-16 or UTF-32 from a byte-order mark or zero bytes and decode the
     * payload as that. JSON exchanged between systems is UTF-8 (RFC 8259), so those are errors here.
     */
    private static void requireUtf8(byte[] payload) {
        int head = Math.min(payload.length, 4);
        for (int i = 0; i < head; i++) {
            if (payload[i] == 0) {
                throw new IllegalArgumentException("Payload is not UTF-8 JSON: it has a zero byte at offset " + i
                        + " (UTF-16 or UTF-32?)");
            }
        }
        if (payload.length >= 2 && ((payload[0] == (byte) 0xFE && payload[1] == (byte) 0xFF)
                || (payload[0] == (byte) 0xFF && payload[1] == (byte) 0xFE))) {
            throw new IllegalArgumentException("Payload is not UTF-8 JSON: it starts with a UTF-16 byte-order mark");
        }
    }

    private static String at(JsonLocation location) {
        if (location == null || location.getLineNr() < 0) {
            return "";
        }
        return " (line " + location.getLineNr() + ", column " + location.getColumnNr() + ")";
    }

    /** The state of one pass. */
    private final class Walk {
        final String[] values = new String[slots];
        final boolean[] resolved = new boolean[slots];

        /** The parser stands on the value {@code node} points at. */
        void value(JsonParser parser, Node node) throws IOException {
            if (node.slot < 0) {
                below(parser, node);
                return;
            }
            if (resolved[node.slot]) {
                parser.skipChildren();
                return;
            }
            boolean container = parser.currentToken().isStructStart();
            String text = text(parser, node);
            values[node.slot] = text;
            resolved[node.slot] = true;
            if (container && node.hasChildren()) {
                // Rare: a template with both /a and /a/b. The copy was consumed, so read it again.
                try (JsonParser copy = JSON.createParser(text)) {
                    copy.nextToken();
                    below(copy, node);
                }
            }
        }

        /**
         * Descends into the object or array the parser stands on, to its end, or skips it. In an object, a name
         * that a pointer follows may come once: see the class comment.
         */
        private void below(JsonParser parser, Node node) throws IOException {
            JsonToken token = parser.currentToken();
            if (token == JsonToken.START_OBJECT) {
                Set<String> followed = null;
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    String name = parser.currentName();
                    Node child = node.byName.get(name);
                    parser.nextToken();
                    if (child == null) {
                        parser.skipChildren();
                        continue;
                    }
                    if (followed == null) {
                        followed = new HashSet<>(4);
                    }
                    if (!followed.add(name)) {
                        // The name is a token of the configured pointer, not payload text.
                        throw new IllegalArgumentException("Payload repeats the name \"" + name + "\" in the "
                                + where(node) + ", so which value is " + child.pointer + " depends on the JSON"
                                + " reader (Jackson's default takes the last, others the first); send each name"
                                + " once in an object");
                    }
                    value(parser, child);
                }
            } else if (token == JsonToken.START_ARRAY) {
                int index = 0;
                while (parser.nextToken() != JsonToken.END_ARRAY) {
                    Node child = node.byIndex.isEmpty() ? null : node.byIndex.get(index);
                    index++;
                    if (child == null) {
                        parser.skipChildren();
                    } else {
                        value(parser, child);
                    }
                }
            }
            // A scalar has nothing below it: every pointer through it is missing.
        }

        private String text(JsonParser parser, Node node) throws IOException {
            switch (parser.currentToken()) {
                case VALUE_NULL:
                    return null;
                case START_OBJECT:
                case START_ARRAY:
                    return compact(parser, node);
                default:
                    // Strings as they are; numbers and booleans as written in the payload.
                    return parser.getText();
            }
        }

        private String compact(JsonParser parser, Node node) throws IOException {
            StringWriter out = new StringWriter();
            try (JsonGenerator generator = JSON.createGenerator(out)) {
                // Exact: a number keeps the digits it was written with, so equal payloads give equal keys.
                generator.copyCurrentStructureExact(parser);
            }
            String text = out.toString();
            try (JsonParser strict = STRICT.createParser(text)) {
                while (strict.nextToken() != null) {
                    // Only a repeated name can fail here: the text is JSON this class just wrote.
                }
            } catch (JsonProcessingException e) {
                // Jackson's message quotes the name, which is payload text: say where instead.
                throw new IllegalArgumentException("Payload repeats a name in an object inside the value at "
                        + node.pointer + ", so that value depends on the JSON reader (Jackson's default takes the"
                        + " last of a repeated name); send each name once in an object");
            }
            return text;
        }
    }

    private static String where(Node node) {
        return node.pointer.isEmpty() ? "payload's top-level object" : "object at " + node.pointer;
    }
}
