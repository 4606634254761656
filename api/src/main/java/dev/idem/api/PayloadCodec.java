package dev.idem.api;

/**
 * Implemented by a handler that decodes and encodes its own payloads, with its own Jackson and {@code ObjectMapper}
 * (bundled in its JAR) or another format altogether, instead of the runtime's Jackson:
 *
 * <pre>{@code
 * public final class OrderHandler implements TypedHandler<OrderPlaced>, PayloadCodec {
 *     private static final ObjectMapper MAPPER = JsonMapper.builder().addModule(new JavaTimeModule()).build();
 *
 *     public <T> T decode(byte[] payload, Class<T> type) throws IOException {
 *         return MAPPER.readValue(payload, type);
 *     }
 *
 *     public byte[] encode(Object value) throws IOException {
 *         return MAPPER.writeValueAsBytes(value);
 *     }
 *     ...
 * }
 * }</pre>
 *
 * <p>The runtime then calls {@link #decode} for a {@link TypedHandler}'s payload and for {@link Message#payloadAs},
 * and {@link #encode} for what {@link HandlerContext#send(String, String, Object, java.util.Map)} sends. The
 * pipeline's {@code payload.format} still applies first: under {@code json} the payload must be well-formed JSON and
 * pass {@code payload.schema}; under {@code text} valid UTF-8.
 *
 * <p>Called from the pipeline's worker threads, concurrently: implementations must be thread-safe. The handler's
 * class loader is the thread's context class loader meanwhile.
 */
public interface PayloadCodec {

    /**
     * Decodes a payload.
     *
     * @param payload the message's bytes; never {@code null}, must not be modified
     * @param type the type wanted: the handler's payload type, or what it asked {@code payloadAs} for
     * @return an instance of {@code type}, not {@code null}
     * @throws Exception when the payload does not decode: the message is dead-lettered as {@code invalid-payload}.
     *         Throw a {@link PayloadException} to name the path and position; from a Jackson exception the runtime
     *         reads them itself, whichever Jackson threw it. Its message is not logged, since it may quote the
     *         payload.
     */
    <T> T decode(byte[] payload, Class<T> type) throws Exception;

    /**
     * Encodes an object the handler sends.
     *
     * @param value what the handler passed to {@code send}; never {@code null}, never a {@code byte[]} (sent as it is)
     * @return the message body
     * @throws Exception when it cannot be encoded: {@code send} throws, and the run fails
     */
    byte[] encode(Object value) throws Exception;
}
