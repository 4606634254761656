package dev.idem.runtime.extract;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;

/**
 * {@code cloudevents}: the key is a binary-mode CloudEvent's {@code id} attribute, read from the
 * first header present of {@code ce_id} (Kafka), {@code ce-id} (HTTP-style), {@code cloudEvents_id}
 * and {@code cloudEvents:id} (AMQP).
 *
 * <p>The CloudEvents spec makes only {@code source} + {@code id} unique, so by default the key is
 * {@code <source> <id>}, the source read from the same binding's header ({@code ce_source}, ...).
 * A source is a URI-reference and so has no space, which keeps that form unambiguous; an event
 * whose source has one is rejected with {@link IllegalArgumentException}. An event with an id but
 * no source yields no key, as does one without an id. Structured-mode events carry the id in the
 * payload: use {@code json-pointer} with {@code /id} for those.
 *
 * <p>Stateless and thread-safe, like the extractors it creates.
 */
public final class CloudEventsIdExtractorProvider implements IdExtractorProvider {

    static final ConfigKey<Boolean> INCLUDE_SOURCE = ConfigKey.bool("include-source")
            .defaultValue(true)
            .doc("Make the key '<source> <id>'. CloudEvents ids are unique only within one source; turn this"
                    + " off only when every event this pipeline consumes comes from a single source.");

    private static final ConfigSpec SPEC = ConfigSpec.builder().define(INCLUDE_SOURCE).build();

    @Override
    public String id() {
        return "cloudevents";
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    @Override
    public IdExtractor create(PluginConfig config) {
        return new CloudEventsIdExtractor(config.get(INCLUDE_SOURCE));
    }
}
