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
import java.util.List;
import java.util.Map;

/**
 * Finds the values at one or more JSON pointers in a UTF-8 JSON payload, in a single streaming pass
 * that skips everything no pointer leads into and stops as soon as every pointer is resolved. No
 * tree is built: the pipeline calls this for every message.
 *
 * <p>Values come back as text: strings as they are, numbers and booleans as written in the payload
 * ({@code 1.50} stays {@code 1.50}), objects and arrays as compact JSON. A missing value or a JSON
 * {@code null} is {@code null}. Where an object repeats a name, the first value wins.
 *
 * <p>Because it stops early, a payload that is broken only after the last value it needs still
 * yields those values; the handler sees the broken payload as usual.
 *
 * <p>Immutable and thread-safe.
 */
final class JsonLookup {

    private static final JsonFactory JSON = JsonFactory.builder()
            // Parse errors end up in logs and dead-letter reasons: keep payload text out of them.
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .build();

    /** A step of the pointers: where each resolves ({@code slot}) and what lies below it. */
    private static final class Node {
        final Map<String, Node> byName = new HashMap<>();
        final Map<Integer, Node> byIndex = new HashMap<>();
        int slot = -1;

        Node child(String token) {
            Node child = byName.computeIfAbsent(token, t -> new Node());
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

    private final Node root = new Node();
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
        int remaining = slots;

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
            String text = text(parser);
            values[node.slot] = text;
            resolved[node.slot] = true;
            remaining--;
            if (container && node.hasChildren()) {
                // Rare: a template with both /a and /a/b. The copy was consumed, so read it again.
                try (JsonParser copy = JSON.createParser(text)) {
                    copy.nextToken();
                    below(copy, node);
                }
            }
        }

        /** Descends into the object or array the parser stands on, or skips it. */
        private void below(JsonParser parser, Node node) throws IOException {
            JsonToken token = parser.currentToken();
            if (token == JsonToken.START_OBJECT) {
                while (remaining > 0 && parser.nextToken() == JsonToken.FIELD_NAME) {
                    Node child = node.byName.get(parser.currentName());
                    parser.nextToken();
                    if (child == null) {
                        parser.skipChildren();
                    } else {
                        value(parser, child);
                    }
                }
            } else if (token == JsonToken.START_ARRAY) {
                int index = 0;
                while (remaining > 0 && parser.nextToken() != JsonToken.END_ARRAY) {
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

        private String text(JsonParser parser) throws IOException {
            switch (parser.currentToken()) {
                case VALUE_NULL:
                    return null;
                case START_OBJECT:
                case START_ARRAY:
                    return compact(parser);
                default:
                    // Strings as they are; numbers and booleans as written in the payload.
                    return parser.getText();
            }
        }

        private String compact(JsonParser parser) throws IOException {
            StringWriter out = new StringWriter();
            try (JsonGenerator generator = JSON.createGenerator(out)) {
                // Exact: a number keeps the digits it was written with, so equal payloads give equal keys.
                generator.copyCurrentStructureExact(parser);
            }
            return out.toString();
        }
    }
}
