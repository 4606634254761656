package dev.idem.runtime;

import dev.idem.api.PayloadException;
import dev.idem.runtime.internal.payload.JsonCodec;
import java.util.Objects;

/**
 * Decodes and encodes payloads as a pipeline with {@code payload.format: json} does for a typed handler, for code that
 * must do the same outside a pipeline: test doubles of {@code Message} and {@code HandlerContext} (a handler's unit
 * test that calls {@code handle(message, context)} on a {@code TypedHandler}), tools. The runtime's Jackson with the
 * pipeline's defaults ({@code payload.unknown-fields: ignore}; strict types, no duplicate names, nothing after the
 * value), bound through the class loader of the type, as {@code docs/design.md} describes under typed payloads.
 *
 * <p>Thread-safe; one Jackson mapper per type, kept with the type (a {@link ClassValue}, so it goes with its class
 * loader).
 */
public final class TypedPayloads {

    private static final ClassValue<JsonCodec> CODECS = new ClassValue<>() {
        @Override
        protected JsonCodec computeValue(Class<?> type) {
            ClassLoader loader = type.getClassLoader();
            return JsonCodec.of(loader != null ? loader : TypedPayloads.class.getClassLoader(), false);
        }
    };

    private TypedPayloads() {
    }

    /**
     * {@code payload} (UTF-8 JSON) as {@code type}.
     *
     * @return an instance of {@code type}, never {@code null}
     * @throws PayloadException naming the JSON path, line and column and what was expected, as the pipeline's dead
     *         letter would
     */
    public static <T> T decode(byte[] payload, Class<T> type) {
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(type, "type");
        T decoded = codecFor(type).decode(payload, type);
        if (decoded == null) {
            throw new PayloadException("$", 1, 1, "an instance of " + type.getSimpleName() + ", found null", null);
        }
        return decoded;
    }

    /**
     * {@code value} as JSON, as {@code HandlerContext.send} writes an object a handler sends.
     *
     * @throws IllegalArgumentException if Jackson cannot write it
     */
    public static byte[] encode(Object value) {
        Objects.requireNonNull(value, "value");
        return codecFor(value.getClass()).encode(value);
    }

    private static JsonCodec codecFor(Class<?> type) {
        return CODECS.get(type);
    }
}
