package dev.idem.runtime.internal.payload;

import dev.idem.api.PayloadException;
import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.temporal.Temporal;
import java.time.temporal.TemporalAmount;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns what a Jackson reader threw into a {@link PayloadException} that names the path, the line and column and
 * what was expected, and never the payload's content: Jackson's own messages quote it ({@code Cannot deserialize
 * value of type int from String "..."}), so they are read for their structure only, never passed on.
 *
 * <p>It reads the exception by the names Jackson's classes and methods have kept across 2.x and 3.x ({@code
 * getPath}, {@code getLocation}, {@code getTargetType}, {@code MismatchedInputException}, ...), through reflection,
 * so that a handler's own {@code PayloadCodec} on its own Jackson, another version in another class loader, is told
 * as well as the runtime's. Only ever on a refused payload. Stateless; thread-safe.
 */
final class JsonFailures {

    /** What a syntax error's message says was expected: Jackson's fixed wording after the offending character. */
    private static final Pattern EXPECTING = Pattern.compile("(?<![A-Za-z])(?:was expecting|expected) (.+?)(?:\\n| at \\[Source|$)",
            Pattern.DOTALL);
    private static final Pattern CLOSER = Pattern.compile("expected '([}\\]])'");
    private static final Pattern CONTROL_CODE = Pattern.compile("CTRL-CHAR, code (\\d+)");
    private static final int MAX_KNOWN_PROPERTIES = 12;

    private JsonFailures() {
    }

    /**
     * The payload problem {@code failure} describes, or {@code null} when it is none of Jackson's reading exceptions
     * (a failure of the decoder itself, not of the payload).
     *
     * @param payload the bytes that were read, to turn offsets into lines and columns and to find a path's value
     * @param failure what the reader threw
     * @param fromTree whether it read a tree rather than the bytes, so that its locations mean nothing
     */
    static PayloadException describe(byte[] payload, Throwable failure, boolean fromTree) {
        Throwable e = failure;
        List<Object> path = null;
        // Databind wraps what the parser threw (syntax, a number out of range, a limit) with the path it had reached;
        // the parser's own exception says what it expected.
        if (is(e, "JsonMappingException", "DatabindException") && e.getCause() != null
                && is(e.getCause(), "JsonProcessingException", "JacksonException")
                && !is(e.getCause(), "JsonMappingException", "DatabindException")) {
            path = path(e);
            e = e.getCause();
        }
        if (is(e, "InputCoercionException")) {
            return at(payload, e, path, fromTree, expected(targetOf(e)) + " within its range");
        }
        if (is(e, "StreamConstraintsException")) {
            return at(payload, e, path, fromTree, limit(String.valueOf(originalMessage(e))));
        }
        if (is(e, "JsonParseException", "StreamReadException", "JsonEOFException", "UnexpectedEndOfInputException")) {
            return syntax(payload, e, path, fromTree);
        }
        if (is(e, "UnrecognizedPropertyException", "PropertyBindingException")) {
            return at(payload, e, null, fromTree, "no property of this name" + known(e));
        }
        if (is(e, "InvalidTypeIdException")) {
            return at(payload, e, null, fromTree, "a known subtype of " + simpleName(baseType(e)));
        }
        if (is(e, "ValueInstantiationException")) {
            Throwable cause = e.getCause();
            return at(payload, e, null, fromTree, "values " + simpleName(type(e)) + " accepts (its constructor threw "
                    + (cause == null ? "an exception" : cause.getClass().getSimpleName()) + ")");
        }
        if (is(e, "MismatchedInputException")) {
            String message = String.valueOf(originalMessage(e));
            if (message.startsWith("No content to map")) {
                return new PayloadException("$", 1, 1, "a JSON value, found an empty payload", failure);
            }
            if (message.startsWith("Trailing token")) {
                JsonPositions.Position position = position(payload, e);
                return new PayloadException("$", position.line(), position.column(),
                        "the end of the payload after its one JSON value", failure);
            }
            return mismatch(payload, e, fromTree, targetOf(e), message.startsWith("Cannot map `null`"));
        }
        if (is(e, "JsonMappingException", "DatabindException")) {
            return at(payload, e, null, fromTree, "a value " + simpleName(type(e)) + " can be read from");
        }
        return null;
    }

    /**
     * What a handler's own decoder threw, when it is not one of Jackson's: the position is unknown, and the
     * exception's message is not used, since it may quote the payload.
     */
    static PayloadException foreign(byte[] payload, Throwable failure, Class<?> type) {
        PayloadException known = describe(payload, failure, false);
        if (known != null) {
            return known;
        }
        return new PayloadException("$", 0, 0, "a payload the handler's own decoder reads as " + type.getSimpleName()
                + " (it threw " + failure.getClass().getName() + ")", failure);
    }

    private static PayloadException syntax(byte[] payload, Throwable e, List<Object> path, boolean fromTree) {
        List<Object> at = path != null ? path : parserPath(e);
        String message = String.valueOf(originalMessage(e));
        String expected;
        if (is(e, "JsonEOFException", "UnexpectedEndOfInputException") || message.startsWith("Unexpected end-of-input")) {
            expected = "the rest of the JSON value: the payload ends inside it";
        } else if (message.startsWith("Duplicate field") || message.startsWith("Duplicate Object property")) {
            expected = "each name once per object: this one repeats an earlier name";
        } else if (message.contains("UTF-8") || message.contains("UTF8")) {
            expected = "UTF-8 text";
        } else if (message.startsWith("Illegal unquoted character")) {
            Matcher code = CONTROL_CODE.matcher(message);
            expected = "a control character in a string escaped (\\n, \\u0000)"
                    + (code.find() ? ", not U+" + String.format("%04X", Integer.parseInt(code.group(1))) : "");
        } else if (message.startsWith("Unexpected close marker")) {
            Matcher closer = CLOSER.matcher(message);
            expected = closer.find() ? "'" + closer.group(1) + "' to close the " + (closer.group(1).equals("}")
                    ? "object" : "array") + " first" : "the open object or array closed first";
        } else if (message.startsWith("Unrecognized character escape")) {
            expected = "a valid escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX";
        } else if (at.isEmpty() && afterRootValue(e)) {
            expected = "the end of the payload after its one JSON value";
        } else {
            Matcher expecting = EXPECTING.matcher(message);
            expected = expecting.find() ? trimParentheses(expecting.group(1).strip()) : "well-formed JSON";
        }
        JsonPositions.Position position;
        if (fromTree) {
            position = positionOf(payload, at);
        } else if (expected.equals("UTF-8 text")) {
            // The parser reports where it stopped, past the bad byte; the bad sequence's first byte is what is wrong.
            long bad = JsonPositions.firstMalformedUtf8(payload);
            position = bad >= 0 ? JsonPositions.position(payload, bad) : position(payload, e);
        } else if (expected.startsWith("each name once")) {
            // The parser stops after the repeated name; the name itself is what is wrong.
            Object location = call(e, "getLocation");
            position = call(location, "getByteOffset") instanceof Long offset && offset > 0
                    ? JsonPositions.position(payload, JsonPositions.nameStart(payload, offset)) : position(payload, e);
        } else {
            position = position(payload, e);
        }
        return new PayloadException(JsonPositions.path(at), position.line(), position.column(), expected, e);
    }

    /** Whether the parser failed at the top level after it had read a whole value: on what trails it. */
    private static boolean afterRootValue(Throwable e) {
        Object context = call(call(e, "getProcessor"), "getParsingContext");
        if (context == null) {
            context = call(call(e, "getProcessor"), "streamReadContext");
        }
        // The root context counts the value being read: a second one has 2.
        return Boolean.TRUE.equals(call(context, "inRoot")) && call(context, "getEntryCount") instanceof Integer n
                && n > 1;
    }

    private static PayloadException mismatch(byte[] payload, Throwable e, boolean fromTree, Class<?> target,
            boolean wasNull) {
        List<Object> path = path(e);
        JsonPositions.Found found = JsonPositions.find(payload, path);
        String what = expected(target);
        String foundText = found.token() != null ? ", found " + JsonPositions.describe(found.token())
                : wasNull ? ", found nothing" : "";
        JsonPositions.Position position = found.token() != null ? JsonPositions.position(payload, found.byteOffset())
                : fromTree ? JsonPositions.Position.UNKNOWN : position(payload, e);
        return new PayloadException(JsonPositions.path(path), position.line(), position.column(), what + foundText, e);
    }

    /**
     * A problem at {@code path} (the exception's own when {@code null}), placed where the value at that path starts,
     * else where the reader stopped.
     */
    private static PayloadException at(byte[] payload, Throwable e, List<Object> path, boolean fromTree,
            String expected) {
        if (path == null) {
            path = path(e);
        }
        JsonPositions.Position position = positionOf(payload, path);
        if (position.line() == 0 && !fromTree) {
            position = position(payload, e);
        }
        return new PayloadException(JsonPositions.path(path), position.line(), position.column(), expected, e);
    }

    private static JsonPositions.Position positionOf(byte[] payload, List<Object> path) {
        JsonPositions.Found found = JsonPositions.find(payload, path);
        return found.token() == null ? JsonPositions.Position.UNKNOWN
                : JsonPositions.position(payload, found.byteOffset());
    }

    /** Where the reader stopped: from the location's byte offset, else its own line and column. */
    private static JsonPositions.Position position(byte[] payload, Throwable e) {
        Object location = call(e, "getLocation");
        if (location == null) {
            return JsonPositions.Position.UNKNOWN;
        }
        Object offset = call(location, "getByteOffset");
        if (offset instanceof Long bytes && bytes >= 0) {
            return JsonPositions.position(payload, bytes);
        }
        Object line = call(location, "getLineNr");
        Object column = call(location, "getColumnNr");
        return line instanceof Integer l && column instanceof Integer c && l > 0
                ? new JsonPositions.Position(l, Math.max(c, 0)) : JsonPositions.Position.UNKNOWN;
    }

    /** The property names and indices of the exception's path ({@code getPath()}'s references). */
    private static List<Object> path(Throwable e) {
        Object references = call(e, "getPath");
        if (!(references instanceof Collection<?> list)) {
            return List.of();
        }
        List<Object> segments = new ArrayList<>(list.size());
        for (Object reference : list) {
            Object name = call(reference, "getFieldName");
            if (name == null) {
                name = call(reference, "getPropertyName");
            }
            if (name != null) {
                segments.add(String.valueOf(name));
            } else if (call(reference, "getIndex") instanceof Integer index && index >= 0) {
                segments.add(index);
            }
        }
        return segments;
    }

    /** The path where a parser stopped, from its read context ({@code getParsingContext} or {@code streamReadContext}). */
    private static List<Object> parserPath(Throwable e) {
        Object context = call(call(e, "getProcessor"), "getParsingContext");
        if (context == null) {
            context = call(call(e, "getProcessor"), "streamReadContext");
        }
        List<Object> segments = new ArrayList<>();
        for (Object c = context; c != null; c = call(c, "getParent")) {
            if (Boolean.TRUE.equals(call(c, "inObject"))) {
                Object name = call(c, "getCurrentName");
                if (name == null) {
                    name = call(c, "currentName");
                }
                if (name != null) {
                    segments.add(String.valueOf(name));
                }
            } else if (Boolean.TRUE.equals(call(c, "inArray")) && call(c, "getCurrentIndex") instanceof Integer index
                    && index >= 0) {
                segments.add(index);
            }
        }
        Collections.reverse(segments);
        return segments;
    }

    private static Class<?> targetOf(Throwable e) {
        return call(e, "getTargetType") instanceof Class<?> c ? c : null;
    }

    private static Class<?> type(Throwable e) {
        Object type = call(e, "getType");
        Object raw = type instanceof Class<?> ? type : call(type, "getRawClass");
        return raw instanceof Class<?> c ? c : null;
    }

    private static Class<?> baseType(Throwable e) {
        Object type = call(e, "getBaseType");
        Object raw = call(type, "getRawClass");
        return raw instanceof Class<?> c ? c : null;
    }

    private static String known(Throwable e) {
        if (!(call(e, "getKnownPropertyIds") instanceof Collection<?> ids) || ids.isEmpty()) {
            return "";
        }
        List<String> names = new ArrayList<>();
        for (Object id : ids) {
            if (names.size() == MAX_KNOWN_PROPERTIES) {
                names.add("...");
                break;
            }
            names.add(String.valueOf(id));
        }
        Collections.sort(names.subList(0, Math.min(names.size(), MAX_KNOWN_PROPERTIES)));
        Class<?> owner = call(e, "getReferringClass") instanceof Class<?> c ? c : null;
        return "; " + simpleName(owner) + " has " + names;
    }

    /** What a type reads from, as a person says it: {@code an integer (int)}, {@code an object (OrderEvent)}. */
    static String expected(Class<?> type) {
        if (type == null || type == Object.class) {
            return "a JSON value of another kind";
        }
        String name = type.getSimpleName();
        if (type == int.class || type == long.class || type == short.class || type == byte.class
                || type == Integer.class || type == Long.class || type == Short.class || type == Byte.class
                || type == BigInteger.class) {
            return "an integer (" + name + ")";
        }
        if (type == double.class || type == float.class || type == Double.class || type == Float.class
                || type == BigDecimal.class || Number.class.isAssignableFrom(type)) {
            return "a number (" + name + ")";
        }
        if (type == boolean.class || type == Boolean.class) {
            return "true or false (" + name + ")";
        }
        if (type == String.class || type == char.class || type == Character.class || CharSequence.class.isAssignableFrom(type)) {
            return "a string";
        }
        if (type.isEnum()) {
            List<String> names = new ArrayList<>();
            for (Object constant : type.getEnumConstants()) {
                names.add(((Enum<?>) constant).name());
            }
            return "one of " + names + " (" + name + ")";
        }
        if (type == byte[].class) {
            return "a base64 string (byte[])";
        }
        if (type.isArray() || Collection.class.isAssignableFrom(type)) {
            return "an array";
        }
        if (Map.class.isAssignableFrom(type)) {
            return "an object";
        }
        if (Temporal.class.isAssignableFrom(type) || TemporalAmount.class.isAssignableFrom(type)) {
            return "an ISO-8601 string (" + name + ")";
        }
        if (type == UUID.class) {
            return "a UUID string";
        }
        if (type.getName().startsWith("java.")) {
            return "a string (" + name + ")";
        }
        return "an object (" + name + ")";
    }

    /** A limit of the parser's, from the numbers of its message (it quotes no content). */
    private static String limit(String message) {
        if (message.contains("nesting depth") || message.contains("Depth")) {
            return "at most " + firstNumberAfter(message, "maximum allowed") + " levels of nesting";
        }
        if (message.startsWith("String value length")) {
            return "a string of at most " + firstNumberAfter(message, "maximum allowed") + " characters";
        }
        if (message.startsWith("Number value length") || message.startsWith("Number length")) {
            return "a number of at most " + firstNumberAfter(message, "maximum allowed") + " digits";
        }
        if (message.startsWith("Name length") || message.startsWith("Name value length")) {
            return "a property name of at most " + firstNumberAfter(message, "maximum allowed") + " characters";
        }
        return "a payload within the JSON reader's limits";
    }

    private static String firstNumberAfter(String message, String marker) {
        int at = message.indexOf(marker);
        Matcher number = Pattern.compile("\\d+").matcher(at < 0 ? message : message.substring(at));
        return number.find() ? number.group() : "the allowed";
    }

    private static String trimParentheses(String text) {
        return text.startsWith("(") && text.endsWith(")") ? text.substring(1, text.length() - 1) : text;
    }

    private static String simpleName(Class<?> type) {
        return type == null ? "the payload type" : type.getSimpleName();
    }

    private static Object originalMessage(Throwable e) {
        Object message = call(e, "getOriginalMessage");
        return message != null ? message : e.getMessage();
    }

    /** Whether {@code e}'s class or one of its superclasses has one of these simple names. */
    private static boolean is(Throwable e, String... simpleNames) {
        for (Class<?> c = e.getClass(); c != null && c != Throwable.class; c = c.getSuperclass()) {
            for (String name : simpleNames) {
                if (c.getSimpleName().equals(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** {@code target.name()}, or {@code null} when there is no such public method or it fails. */
    private static Object call(Object target, String name) {
        if (target == null) {
            return null;
        }
        try {
            Method method = target.getClass().getMethod(name);
            return method.invoke(target);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return null;
        }
    }
}
