package dev.idem.runtime.extract;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;

/**
 * {@code json-pointer}: the key is the value at an RFC 6901 JSON pointer into a UTF-8 JSON payload,
 * such as {@code /orderId} or {@code /items/0/id}. Strings are used as they are; numbers and booleans
 * as written in the payload ({@code 42}, {@code 1.50}, {@code true}); objects and arrays as compact
 * JSON. A missing value, a JSON {@code null} or a blank string yields no key.
 *
 * <p>The payload is streamed, without building a tree, to the end of its top-level value; a payload that is
 * not JSON (or not UTF-8), or in which an object on the pointer's path repeats the name the pointer follows
 * (or the value read holds an object that repeats a name), makes the extractor throw
 * {@link IllegalArgumentException}, which the runtime treats as an invalid key ({@code invalid-id}): parsers
 * disagree on which of two values of one name counts, so the key would depend on the reader.
 *
 * <p>{@link #create} throws {@link dev.idem.spi.ConfigException} for an invalid pointer, although
 * the declared key already rejects one when the configuration is loaded. Stateless and thread-safe,
 * like the extractors it creates.
 */
public final class JsonPointerIdExtractorProvider implements IdExtractorProvider {

    static final ConfigKey<String> POINTER = ConfigKey.string("pointer")
            .required()
            .validate(Pointer::isValid, Pointer.RULE)
            .doc("The JSON pointer (RFC 6901) to the key in the payload, such as /orderId or /items/0/id."
                    + " Strings are used as they are, numbers and booleans as written, objects and arrays"
                    + " as compact JSON. The payload must be UTF-8 JSON. A payload in which an object on the"
                    + " pointer's path repeats the name the pointer follows (`{\"orderId\":1,\"orderId\":2}`),"
                    + " or whose value holds an object that repeats a name, has an invalid key (`invalid-id`,"
                    + " then `missing-id` applies): JSON readers disagree on which value counts.");

    private static final ConfigSpec SPEC = ConfigSpec.builder().define(POINTER).build();

    @Override
    public String id() {
        return "json-pointer";
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    @Override
    public IdExtractor create(PluginConfig config) {
        String text = config.get(POINTER);
        Pointer pointer;
        try {
            pointer = Pointer.parse(text);
        } catch (IllegalArgumentException e) {
            throw Values.invalid(config, POINTER, text, e.getMessage());
        }
        return new JsonPointerIdExtractor(pointer);
    }
}
