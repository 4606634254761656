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
 * <p>The payload is streamed and reading stops at the value, so large payloads cost little; a
 * payload that is not JSON (or not UTF-8) up to that point makes the extractor throw
 * {@link IllegalArgumentException}, which the runtime treats as an invalid key.
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
                    + " as compact JSON. The payload must be UTF-8 JSON.");

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
