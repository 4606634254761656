package dev.idem.runtime.extract;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;
import java.util.List;

/**
 * {@code template}: the key is built from several fields, a business key such as
 * {@code order-{/orderId}-{/lineNo}} or {@code {header:tenant}:{/orderId}}. Placeholders:
 * {@code {/json/pointer}} (a payload value, as {@code json-pointer} reads it), {@code {header:name}},
 * {@code {key}}, {@code {source}}, {@code {partition}} and {@code {broker-id}}; <code>{{</code> and
 * <code>}}</code> are literal braces. If any field is missing or blank the message has no key.
 *
 * <p>The template is parsed once, in {@link #create}, which throws {@link dev.idem.spi.ConfigException}
 * naming the template and what is wrong with it (an unclosed brace, an unknown placeholder, no
 * placeholder at all); {@link #validate} reports the same without creating anything, for {@code idem check}.
 * The extractor throws {@link IllegalArgumentException} when the template reads
 * the payload and it is not UTF-8 JSON, or repeats a name on a placeholder's path, as {@code json-pointer}
 * does. Stateless and thread-safe, like the extractors it creates.
 */
public final class TemplateIdExtractorProvider implements IdExtractorProvider {

    static final ConfigKey<String> TEMPLATE = ConfigKey.string("template")
            .required()
            .doc("The key, as text with placeholders: " + Template.PLACEHOLDERS
                    + ", for example order-{/orderId}-{/lineNo}. Write {{ and }} for literal braces."
                    + " A message missing any field has no key. Payload fields are read as `json-pointer` reads"
                    + " them: a payload that repeats a name on a field's path has an invalid key.");

    private static final ConfigSpec SPEC = ConfigSpec.builder().define(TEMPLATE).build();

    @Override
    public String id() {
        return "template";
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    /** The template parsed as {@link #create} parses it, each fault named with the entry's path. */
    @Override
    public List<ConfigProblem> validate(PluginConfig config) {
        String text = config.get(TEMPLATE);
        try {
            Template.parse(text);
            return List.of();
        } catch (IllegalArgumentException e) {
            return List.of(Values.problem(config, TEMPLATE, text, e.getMessage()));
        }
    }

    @Override
    public IdExtractor create(PluginConfig config) {
        String text = config.get(TEMPLATE);
        try {
            return new TemplateIdExtractor(text, Template.parse(text));
        } catch (IllegalArgumentException e) {
            throw Values.invalid(config, TEMPLATE, text, e.getMessage());
        }
    }
}
