package dev.idem.api;

import java.util.Objects;

/**
 * A handler that takes its payload as an object of its own type, a record or a POJO of the handler's JAR, which the
 * runtime decodes before each run; the {@link Message} stays at hand for headers, key and attempt:
 *
 * <pre>{@code
 * public record OrderPlaced(String orderId, BigDecimal total) { }
 *
 * public final class OrderHandler implements TypedHandler<OrderPlaced> {
 *     public void handle(OrderPlaced order, Message message, HandlerContext context) { ... }
 * }
 * }</pre>
 *
 * <p>The pipeline's {@code payload.format} says how: under {@code json} the runtime decodes with its own Jackson,
 * bound through the handler's class loader (records and POJOs need no annotations; Jackson annotations on the
 * handler's classes are honoured, since the runtime lends {@code com.fasterxml.jackson.annotation} to handler JARs),
 * after the payload passed the pipeline's {@code payload.schema}, if any. A {@code String} payload type takes the
 * payload's UTF-8 text ({@code text} or {@code json}), a {@code byte[]} the bytes (any format). A handler that brings
 * its own decoding (its own Jackson and {@code ObjectMapper}, or another format) also implements
 * {@link PayloadCodec}, and then any format and type go.
 *
 * <p>A payload that does not decode is never handed to the handler: the runtime dead-letters the message with cause
 * {@code invalid-payload}, naming the JSON path, line and column and what was expected there ({@link
 * PayloadException}), releases its key and does not retry it.
 *
 * <p>A typed handler is a {@link MessageHandler}: it is named in configuration and bound in code the same way, and
 * the same contract holds (thread-safe, one instance per pipeline, return means done, throw means retry).
 *
 * @param <T> the payload type
 */
@FunctionalInterface
public interface TypedHandler<T> extends MessageHandler {

    /**
     * Processes one message.
     *
     * @param payload the decoded payload, never {@code null}; a fresh instance for every run of the message
     * @param message the message it came in, for headers, key and attempt; {@code message.payload()} holds its bytes
     * @param context the pipeline, deadline, logger and store transaction of this run
     * @throws Exception any failure; the runtime retries, then dead-letters
     */
    void handle(T payload, Message message, HandlerContext context) throws Exception;

    /**
     * The type payloads are decoded to. By default {@code T} as the class declares it ({@code implements
     * TypedHandler<OrderPlaced>}, directly or through a superclass); override it when the declaration does not name a
     * class (a lambda: use {@link #of}). Called once when the pipeline is built, possibly before {@code init}.
     *
     * @throws IllegalStateException if the class does not name {@code T}
     */
    @SuppressWarnings("unchecked")
    default Class<T> payloadType() {
        return (Class<T>) TypeArguments.payloadTypeOf(getClass());
    }

    /** Takes the payload as {@link #payloadType()} from the message, then runs {@link #handle(Object, Message, HandlerContext)}. */
    @Override
    default void handle(Message message, HandlerContext context) throws Exception {
        handle(message.payloadAs(payloadType()), message, context);
    }

    /**
     * A typed handler from a lambda, whose type the runtime cannot read from a class declaration:
     * {@code TypedHandler.of(OrderPlaced.class, (order, message, context) -> ...)}.
     *
     * @throws NullPointerException if either argument is {@code null}
     */
    static <T> TypedHandler<T> of(Class<T> type, TypedHandler<T> handler) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(handler, "handler");
        return new TypedHandler<>() {
            @Override
            public void handle(T payload, Message message, HandlerContext context) throws Exception {
                handler.handle(payload, message, context);
            }

            @Override
            public Class<T> payloadType() {
                return type;
            }

            @Override
            public String toString() {
                return "TypedHandler.of(" + type.getName() + ", " + handler + ")";
            }
        };
    }
}
