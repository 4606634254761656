package dev.idem.runtime.internal.pipeline;

import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.api.PayloadCodec;
import dev.idem.runtime.internal.payload.JsonCodec;
import java.util.Arrays;

/**
 * How a durable step's result is kept in the store: one tag byte, then the result. {@code b}: a {@code byte[]} as
 * it is; {@code n}: {@code null} of any type; {@code j}: anything else, encoded with the same codec as the pipeline's
 * typed payloads: the handler's own {@link PayloadCodec} when it implements one, else the runtime's {@link JsonCodec}
 * bound to the handler's class loader (so a handler in its own JAR gets its own types back, {@code java.time} and
 * {@code Optional} included). Reading ignores properties the type no longer has, so that a result recorded by the
 * handler's previous version still reads after an upgrade that dropped a field.
 *
 * <p>Thread-safe: both codecs are.
 */
final class StepCodec {

    private static final byte BYTES = 'b';
    private static final byte NULL = 'n';
    private static final byte ENCODED = 'j';

    private final JsonCodec json;
    /** The handler's own codec, or {@code null}. */
    private final PayloadCodec own;

    StepCodec(MessageHandler handler) {
        this.json = JsonCodec.of(handler.getClass().getClassLoader(), false);
        this.own = handler instanceof PayloadCodec codec ? codec : null;
    }

    /**
     * The result as recorded.
     *
     * @throws NonRetryableException if the codec cannot write it; the step's action has run, and running it again
     *         would not make the result writable
     */
    byte[] encode(Object result, String step) {
        if (result == null) {
            return new byte[] {NULL};
        }
        if (result instanceof byte[] bytes) {
            return tagged(BYTES, bytes);
        }
        try {
            return tagged(ENCODED, own != null ? own.encode(result) : json.encode(result));
        } catch (Exception e) {
            throw new NonRetryableException("Step '" + step + "' ran, but its result (a " + result.getClass().getName()
                    + ") cannot be encoded, so it was not recorded: " + e.getMessage() + ". Return a type the codec"
                    + " writes (a record, a bean, a String) or a byte[]", e);
        }
    }

    /**
     * The recorded result, read as {@code type}.
     *
     * @throws NonRetryableException if it cannot be read as {@code type} (the handler changed the step's type);
     *         running again would not help, and the recorded result stays for a fixed handler
     */
    @SuppressWarnings("unchecked")
    <T> T decode(byte[] recorded, Class<T> type, String step) {
        if (recorded.length == 0) {
            throw unreadable(step, type, "an empty value", null);
        }
        switch (recorded[0]) {
            case NULL:
                if (type.isPrimitive()) {
                    throw unreadable(step, type, "null", null);
                }
                return null;
            case BYTES:
                if (type != byte[].class) {
                    throw unreadable(step, type, "bytes", null);
                }
                return (T) Arrays.copyOfRange(recorded, 1, recorded.length);
            case ENCODED:
                byte[] encoded = Arrays.copyOfRange(recorded, 1, recorded.length);
                try {
                    return own != null ? own.decode(encoded, type) : (T) json.decode(json.readerFor(json.type(type)),
                            encoded);
                } catch (Exception e) {
                    throw unreadable(step, type, "a result (" + e.getMessage() + ")", e);
                }
            default:
                throw unreadable(step, type, "a value Idem did not write (tag " + (recorded[0] & 0xFF) + ")", null);
        }
    }

    private static NonRetryableException unreadable(String step, Class<?> type, String what, Exception cause) {
        return new NonRetryableException("The result recorded for step '" + step + "' is " + what + " that cannot be"
                + " read as " + type.getName() + "; was the step's type changed since it was recorded?", cause);
    }

    private static byte[] tagged(byte tag, byte[] body) {
        byte[] out = new byte[body.length + 1];
        out[0] = tag;
        System.arraycopy(body, 0, out, 1, body.length);
        return out;
    }
}
