package dev.idem.runtime.internal.payload;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.databind.type.TypeFactory;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.idem.api.PayloadException;
import java.io.IOException;
import java.lang.reflect.Type;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The runtime's Jackson for a handler's own classes: one mapper per pipeline, whose type factory loads classes
 * through the handler's class loader, so that the records and POJOs of a handler JAR (and the types their
 * {@code @JsonTypeInfo} names) bind as they would inside the JAR. What it reads is strict, since a payload it lets
 * through reaches the handler as a typed value that looks valid:
 * <ul>
 *   <li>one JSON value in UTF-8, nothing after it; each name once per object (readers disagree on which of two
 *       values counts, as {@code docs/design.md} says of keys);</li>
 *   <li>no coercion between strings, numbers and booleans: {@code "42"} is not an {@code int}, {@code 42} is not a
 *       {@code String}; a decimal is not an integer ({@code 1.5} into an {@code int}); {@code null} or nothing is not
 *       a primitive;</li>
 *   <li>{@code java.time} types and {@code Optional} bind (written as ISO-8601 strings), as in Spring Boot's mapper;
 *       unknown properties are ignored unless the pipeline says {@code payload.unknown-fields: fail}.</li>
 * </ul>
 * Jackson's default limits hold (a string of at most 20,000,000 characters, 1,000 levels of nesting, numbers of
 * 1,000 digits). Every failure to read is a {@link PayloadException} naming the path, the line and column and what
 * was expected, never the payload's content.
 *
 * <p>Meant for reuse wherever the runtime writes and reads a handler's objects. Thread-safe: the mapper is configured
 * once, in the constructor.
 */
public final class JsonCodec {

    private final ObjectMapper mapper;
    /** Reads trees for schema checks, decimals as {@code BigDecimal} so that {@code multipleOf} is exact. */
    private final ObjectReader trees;

    private JsonCodec(ObjectMapper mapper) {
        this.mapper = mapper;
        this.trees = mapper.reader().with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS).forType(JsonNode.class);
    }

    /**
     * A codec for the classes {@code loader} sees.
     *
     * @param failOnUnknownProperties whether a JSON property the target type lacks makes a payload invalid
     */
    public static JsonCodec of(ClassLoader loader, boolean failOnUnknownProperties) {
        JsonMapper mapper = JsonMapper.builder()
                .typeFactory(TypeFactory.defaultInstance().withClassLoader(loader))
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS, DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, failOnUnknownProperties)
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
                .enable(JsonWriteFeature.COMBINE_UNICODE_SURROGATES_IN_UTF8)
                .addModule(new JavaTimeModule())
                .addModule(new Jdk8Module())
                .build();
        mapper.coercionConfigFor(LogicalType.Textual)
                .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        for (LogicalType scalar : new LogicalType[] {LogicalType.Integer, LogicalType.Float, LogicalType.Boolean}) {
            mapper.coercionConfigFor(scalar).setCoercion(CoercionInputShape.String, CoercionAction.Fail);
        }
        return new JsonCodec(mapper);
    }

    /** {@code type} (a class or a generic type such as {@code List<Item>}) as Jackson resolves it. */
    public JavaType type(Type type) {
        return mapper.constructType(type);
    }

    /** The type {@code handlerType} gives {@code generic}'s single type parameter, or {@code null} when it names none. */
    public JavaType typeArgument(Class<?> handlerType, Class<?> generic) {
        JavaType[] arguments = mapper.getTypeFactory().findTypeParameters(mapper.constructType(handlerType), generic);
        return arguments.length == 1 && arguments[0].getRawClass() != Object.class ? arguments[0] : null;
    }

    /**
     * Why {@code type} cannot be decoded at all (an interface, no constructor Jackson can use), or {@code null} when
     * it can: Jackson is asked for its deserializer, then to read an empty object, where only a definition problem
     * counts (what the type's constructor thinks of missing values does not).
     */
    public String undecodable(JavaType type) {
        AtomicReference<Throwable> why = new AtomicReference<>();
        if (!mapper.canDeserialize(type, why)) {
            return why.get() == null ? "Jackson finds no way to create it" : why.get().getMessage();
        }
        try {
            mapper.readerFor(type).readValue("{}");
        } catch (InvalidDefinitionException e) {
            return e.getOriginalMessage();
        } catch (IOException | RuntimeException payloadProblem) {
            // Not the type's fault: the empty object is not a valid payload of it.
        }
        return null;
    }

    /** A reader of {@code type}, to keep for payloads of one type. */
    public ObjectReader readerFor(JavaType type) {
        return mapper.readerFor(type);
    }

    /**
     * Decodes {@code payload} with {@code reader}.
     *
     * @throws PayloadException if it does not read as the reader's type
     * @throws IllegalStateException if the type cannot be read from any payload (a definition problem, not the
     *         payload's)
     */
    public Object decode(ObjectReader reader, byte[] payload) {
        try {
            return reader.readValue(payload);
        } catch (IOException e) {
            throw failure(payload, e, false);
        }
    }

    /** Decodes {@code payload} into {@code type}. */
    public <T> T decode(byte[] payload, Class<T> type) {
        return type.cast(decode(mapper.readerFor(type), payload));
    }

    /** {@code payload} as a tree, numbers exact, for a schema check. */
    public JsonNode tree(byte[] payload) {
        try {
            JsonNode tree = trees.readValue(payload);
            if (tree == null || tree.isMissingNode()) {
                throw new PayloadException("$", 1, 1, "a JSON value, found an empty payload", null);
            }
            return tree;
        } catch (IOException e) {
            throw failure(payload, e, false);
        }
    }

    /**
     * Checks that {@code payload} is one well-formed JSON value, each name once per object, by reading its tokens
     * without building anything.
     *
     * @throws PayloadException naming where it is not
     */
    public void check(byte[] payload) {
        try (JsonParser p = mapper.createParser(payload)) {
            if (p.nextToken() == null) {
                throw new PayloadException("$", 1, 1, "a JSON value, found an empty payload", null);
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                JsonPositions.Position at = JsonPositions.position(payload, p.currentTokenLocation().getByteOffset());
                throw new PayloadException("$", at.line(), at.column(),
                        "the end of the payload after its one JSON value, found " + JsonPositions.describe(
                                p.currentToken()), null);
            }
        } catch (IOException e) {
            throw failure(payload, e, false);
        }
    }

    /**
     * {@code value} as JSON.
     *
     * @throws IllegalArgumentException if Jackson cannot write it, with its reason
     */
    public byte[] encode(Object value) {
        try {
            return mapper.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("Cannot write " + value.getClass().getName() + " as JSON: "
                    + e.getOriginalMessage() + ". Send a record, a bean, a collection or a String, or a byte[]", e);
        }
    }

    /** What {@link #decode} or {@link #tree} threw, as a payload problem, unless it is the type's own. */
    static RuntimeException failure(byte[] payload, Exception e, boolean fromTree) {
        if (is(e, "InvalidDefinitionException")) {
            return new IllegalStateException("Jackson cannot decode into this type at all: "
                    + ((JsonProcessingException) e).getOriginalMessage(), e);
        }
        PayloadException problem = JsonFailures.describe(payload, e, fromTree);
        return problem != null ? problem : new PayloadException("$", 0, 0, "a payload the JSON reader can read ("
                + e.getClass().getSimpleName() + ")", e);
    }

    private static boolean is(Throwable e, String simpleName) {
        for (Class<?> c = e.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getSimpleName().equals(simpleName)) {
                return true;
            }
        }
        return false;
    }
}
