package dev.idem.runtime.config;

import java.nio.file.Path;
import java.util.Objects;

/**
 * How a pipeline reads its payloads before the handler runs ({@code payload.*}): what it checks them to be, how a
 * typed handler's payload type treats JSON properties it lacks, and the JSON Schema every payload must match.
 *
 * @param format what a payload must be: read not at all, as UTF-8 text, or as one JSON value; {@code null} when left
 *        out, for the handler's payload type to say ({@link #formatFor})
 * @param unknownFields under {@link Format#JSON}, what decoding into a typed handler's payload type does with a
 *        property the type does not have
 * @param schema the JSON Schema file every payload must match, or {@code null} for none (only under {@code json})
 */
public record PayloadPolicy(Format format, UnknownFields unknownFields, Path schema) {

    public PayloadPolicy {
        Objects.requireNonNull(unknownFields, "unknownFields");
    }

    /**
     * The format for a handler whose payload type is {@code payloadType} ({@code null} for a plain
     * {@code MessageHandler}): the configured one, else {@code bytes} for a handler of bytes, {@code text} for one of
     * {@code String}, {@code json} for any other type.
     */
    public Format formatFor(Class<?> payloadType) {
        if (format != null) {
            return format;
        }
        if (payloadType == null || payloadType == byte[].class) {
            return Format.BYTES;
        }
        return payloadType == String.class ? Format.TEXT : Format.JSON;
    }

    /** What the runtime reads a payload as before the handler runs. */
    public enum Format {
        /** Not read: the handler takes the bytes (the default, and how handlers always ran). */
        BYTES,
        /** UTF-8 text: a payload that is not valid UTF-8 is invalid. */
        TEXT,
        /** One JSON value in UTF-8, checked against the schema if any, decoded for a typed handler. */
        JSON
    }

    /** What decoding into a typed handler's payload type does with a JSON property the type does not have. */
    public enum UnknownFields {
        /** Skip it: producers may add fields before the handler knows them. */
        IGNORE,
        /** The payload is invalid, naming the property. */
        FAIL
    }
}
