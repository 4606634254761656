package dev.idem.runtime.internal.payload;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.idem.api.MessageHandler;
import dev.idem.api.PayloadCodec;
import dev.idem.api.PayloadException;
import dev.idem.api.TypedHandler;
import dev.idem.runtime.config.PayloadPolicy;
import dev.idem.runtime.config.PayloadPolicy.Format;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.spi.ConfigException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * How one pipeline reads its payloads before the handler runs, and writes the objects its handler sends: its
 * {@code payload.*} settings bound to its handler. {@link #prepare} runs on the worker, as the first step of every
 * handler run (never on the adapter's intake thread): under {@code text} it checks UTF-8; under {@code json} the
 * syntax and the schema, and for a {@link TypedHandler} it decodes the payload into the handler's type, with the
 * runtime's {@link JsonCodec} or the handler's own {@link PayloadCodec}. Each run decodes afresh, so that a handler
 * that changed a mutable payload in a failed run does not see its changes in the retry.
 *
 * <p>What does not read throws {@link PayloadException}, which the run strategy dead-letters as
 * {@code invalid-payload}. Built once per pipeline, complete; thread-safe.
 */
public final class Payloads {

    /** What a payload is checked to be before each run: the configured format, else what the handler's type implies. */
    private final Format format;
    private final JsonCodec json;
    /** The schema every payload must match, or {@code null}. */
    private final PayloadSchema schema;
    /** The typed handler's payload type, or {@code null} for a plain handler. */
    private final Class<?> type;
    /** Reads {@link #type} with the runtime's Jackson; {@code null} unless that is how the payload is decoded. */
    private final ObjectReader reader;
    /** The handler's own codec, or {@code null}. */
    private final PayloadCodec own;

    private Payloads(Format format, JsonCodec json, PayloadSchema schema, Class<?> type, ObjectReader reader,
            PayloadCodec own) {
        this.format = format;
        this.json = json;
        this.schema = schema;
        this.type = type;
        this.reader = reader;
        this.own = own;
    }

    /**
     * Binds the pipeline's payload settings to its handler: loads the schema, resolves the typed handler's payload
     * type and checks that the format can give it.
     *
     * @throws ConfigException naming every problem: the schema file, a payload type the format cannot give or
     *         Jackson cannot create
     */
    public static Payloads of(PipelineConfig config, MessageHandler handler) {
        List<String> problems = new ArrayList<>();
        Payloads payloads = build(config, handler, problems);
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return payloads;
    }

    /** What {@link #of} would refuse, for {@code idem check}; empty when the pipeline can be built. */
    public static List<String> problems(PipelineConfig config, MessageHandler handler) {
        List<String> problems = new ArrayList<>();
        build(config, handler, problems);
        return problems;
    }

    private static Payloads build(PipelineConfig config, MessageHandler handler, List<String> problems) {
        PayloadPolicy policy = config.payload();
        String path = "pipelines." + config.name() + ".";
        ClassLoader loader = handler == null || handler.getClass().getClassLoader() == null
                ? Payloads.class.getClassLoader() : handler.getClass().getClassLoader();
        JsonCodec json = JsonCodec.of(loader, policy.unknownFields() == PayloadPolicy.UnknownFields.FAIL);
        PayloadSchema schema = null;
        if (policy.schema() != null) {
            try {
                schema = PayloadSchema.load(policy.schema(), path + RuntimeConfigSpecs.PAYLOAD_SCHEMA.name());
            } catch (ConfigException e) {
                problems.add(e.getMessage());
            }
        }
        PayloadCodec own = handler instanceof PayloadCodec codec ? codec : null;
        String named = handler == null ? "(none)" : handler.getClass().getName();
        Class<?> type = null;
        if (handler instanceof TypedHandler<?> typed) {
            try {
                type = typed.payloadType();
            } catch (RuntimeException e) {
                problems.add("Handler " + named + " of pipeline '" + config.name() + "': " + e.getMessage());
                return null;
            }
            if (type == null) {
                problems.add("Handler " + named + " of pipeline '" + config.name() + "' gives no payload type:"
                        + " payloadType() returned null");
                return null;
            }
        }
        Format format = policy.formatFor(type);
        String formatKey = path + RuntimeConfigSpecs.PAYLOAD_FORMAT.name();
        if (policy.schema() != null && format != Format.JSON) {
            // Only when payload.format was left out: an explicit one the configuration check already matched.
            problems.add(path + RuntimeConfigSpecs.PAYLOAD_SCHEMA.name() + " checks JSON payloads, but handler " + named
                    + " takes " + (type == null ? "bytes" : type.getSimpleName()) + " payloads, so " + formatKey
                    + " left out is " + format.name().toLowerCase(Locale.ROOT) + ". Set " + formatKey + ": json");
        }
        ObjectReader reader = null;
        boolean raw = type == null || type == byte[].class || type == String.class && format != Format.BYTES;
        if (own == null && !raw && format != Format.JSON) {
            problems.add("Handler " + named + " of pipeline '" + config.name() + "' takes " + type.getName()
                    + " payloads, but " + formatKey + " is " + format.name().toLowerCase(Locale.ROOT)
                    + (format == Format.BYTES ? ", which hands over bytes" : "") + ". Set " + formatKey
                    + (type == String.class ? ": text (or json)" : ": json (or leave it out), for the runtime to"
                    + " decode them from JSON, or have the handler implement " + PayloadCodec.class.getName()
                    + " to decode its own"));
        } else if (own == null && !raw) {
            JavaType javaType = payloadType(json, handler.getClass(), type);
            String undecodable = json.undecodable(javaType);
            if (undecodable != null) {
                problems.add("Handler " + named + " of pipeline '" + config.name() + "' takes " + javaType
                        .toCanonical() + " payloads, which Jackson cannot create: " + undecodable + ". Give the"
                        + " type a public constructor Jackson can use (a record does), or decode the payload in"
                        + " the handler (implement " + PayloadCodec.class.getName() + ")");
            } else {
                reader = json.readerFor(javaType);
            }
        }
        return new Payloads(format, json, schema, type, reader, own);
    }

    /**
     * The type to decode into: {@code T} as the class declares it when that is what {@code payloadType()} says, with
     * its type arguments ({@code TypedHandler<List<Item>>} gives {@code List<Item>}, not a list of maps), else the
     * class {@code payloadType()} returned.
     */
    private static JavaType payloadType(JsonCodec json, Class<?> handlerClass, Class<?> type) {
        JavaType declared = json.typeArgument(handlerClass, TypedHandler.class);
        return declared != null && declared.getRawClass() == type ? declared : json.type(type);
    }

    /** Whether runs need nothing from here: bytes handed over as they are. */
    public boolean passthrough() {
        return format == Format.BYTES && type == null;
    }

    /** The typed handler's payload type, or {@code null}. */
    public Class<?> type() {
        return type;
    }

    /**
     * Reads the payload as the pipeline's format says, before a handler run: for a typed handler, its payload;
     * otherwise {@code null} once the payload was found well-formed.
     *
     * @throws PayloadException if it does not read
     * @throws IllegalStateException if the handler's payload type cannot be decoded at all (not the payload's fault)
     */
    public Object prepare(byte[] payload) {
        String text = null;
        switch (format) {
            case TEXT -> text = utf8(payload);
            case JSON -> {
                if (schema != null) {
                    schema.check(json.tree(payload), payload);
                } else if (reader == null || own != null) {
                    json.check(payload);
                }
            }
            default -> {
                // bytes: nothing to check
            }
        }
        if (type == null) {
            return null;
        }
        if (type == byte[].class) {
            return payload;
        }
        if (type == String.class && own == null) {
            return text != null ? text : new String(payload, StandardCharsets.UTF_8);
        }
        Object decoded = own != null ? ownDecode(payload, type) : json.decode(reader, payload);
        if (decoded == null) {
            throw new PayloadException("$", 1, 1, JsonFailures.expected(type) + ", found null", null);
        }
        return decoded;
    }

    /**
     * {@code Message.payloadAs(wanted)}: the payload a run was given when it is one, else decoded now.
     *
     * @param prepared what {@link #prepare} gave the run, or {@code null}
     * @throws PayloadException if it does not decode
     */
    public <T> T as(byte[] payload, Object prepared, Class<T> wanted) {
        if (wanted == byte[].class) {
            return wanted.cast(payload);
        }
        if (prepared != null && wanted.isInstance(prepared)) {
            return wanted.cast(prepared);
        }
        if (own != null) {
            return wanted.cast(ownDecode(payload, wanted));
        }
        if (wanted == String.class) {
            return wanted.cast(format == Format.BYTES ? new String(payload, StandardCharsets.UTF_8) : utf8(payload));
        }
        // Whatever the format checked before the run, a type asked for here is read from JSON: the handler asked.
        T decoded = json.decode(payload, wanted);
        if (decoded == null) {
            throw new PayloadException("$", 1, 1, JsonFailures.expected(wanted) + ", found null", null);
        }
        return decoded;
    }

    /**
     * What {@code HandlerContext.send(..., Object, ...)} sends: a {@code byte[]} as it is, else the handler's own
     * encoding, else a {@code String}'s UTF-8 text, else JSON.
     *
     * @throws IllegalArgumentException if it cannot be encoded
     */
    public byte[] encode(Object value) {
        if (value == null) {
            throw new NullPointerException("payload");
        }
        if (value instanceof byte[] bytes) {
            return bytes;
        }
        if (own != null) {
            try {
                byte[] encoded = own.encode(value);
                if (encoded == null) {
                    throw new IllegalArgumentException(own.getClass().getName() + ".encode returned null for a "
                            + value.getClass().getName());
                }
                return encoded;
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalArgumentException(own.getClass().getName() + " cannot encode a "
                        + value.getClass().getName() + ": " + e, e);
            }
        }
        if (value instanceof String text) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        return json.encode(value);
    }

    private Object ownDecode(byte[] payload, Class<?> wanted) {
        Object decoded;
        try {
            decoded = own.decode(payload, wanted);
        } catch (PayloadException e) {
            throw e;
        } catch (Exception e) {
            throw JsonFailures.foreign(payload, e, wanted);
        }
        if (decoded == null) {
            throw new PayloadException("$", 1, 1, JsonFailures.expected(wanted) + ", found null (the handler's"
                    + " decoder returned null)", null);
        }
        if (!wanted.isInstance(decoded)) {
            throw new IllegalStateException(own.getClass().getName() + ".decode returned a " + decoded.getClass()
                    .getName() + " where a " + wanted.getName() + " was asked for");
        }
        return decoded;
    }

    /**
     * The payload as text.
     *
     * @throws PayloadException at the first byte that is not UTF-8
     */
    private static String utf8(byte[] payload) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(payload);
        CharBuffer out = CharBuffer.allocate((int) Math.min(Integer.MAX_VALUE - 8L, payload.length + 1L));
        CoderResult result = decoder.decode(in, out, true);
        if (result.isError()) {
            JsonPositions.Position at = JsonPositions.position(payload, in.position());
            throw new PayloadException(null, at.line(), at.column(), "UTF-8 text (byte " + (in.position() + 1)
                    + " starts no UTF-8 character)", null);
        }
        decoder.flush(out);
        return out.flip().toString();
    }

    /**
     * What a dead letter of an invalid payload says: the problem, and for a payload type's constructor that refused
     * the values, what it said (the dead letter holds the payload anyway; the log line gets the problem only).
     */
    public static String deadLetterDetail(PayloadException e) {
        Throwable cause = e.getCause();
        if (cause != null && cause.getClass().getSimpleName().equals("ValueInstantiationException")
                && cause.getCause() != null && cause.getCause().getMessage() != null) {
            return e.getMessage() + ": " + cause.getCause().getMessage();
        }
        return e.getMessage();
    }
}
