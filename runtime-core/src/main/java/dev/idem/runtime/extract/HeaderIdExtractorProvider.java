package dev.idem.runtime.extract;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;

/**
 * {@code header}: the key is the value of one message header (a Kafka header, an AMQP property,
 * a JMS string property), {@code message-id} unless {@code name} says otherwise. Header names
 * match exactly, case included. A missing or blank header yields no key.
 *
 * <p>A CloudEvents id is reachable by naming its header ({@code ce_id} on Kafka, {@code ce-id}
 * over HTTP-style headers), but the {@code cloudevents} extractor is usually better: it scopes
 * the id by the event's source, as the CloudEvents spec requires.
 *
 * <p>Stateless and thread-safe, like the extractors it creates.
 */
public final class HeaderIdExtractorProvider implements IdExtractorProvider {

    static final ConfigKey<String> NAME = ConfigKey.string("name")
            .defaultValue("message-id")
            .validate(name -> !name.isBlank(), "not be blank")
            .doc("The header that holds the key. Matched exactly, case included.");

    private static final ConfigSpec SPEC = ConfigSpec.builder().define(NAME).build();

    @Override
    public String id() {
        return "header";
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    @Override
    public IdExtractor create(PluginConfig config) {
        return new HeaderIdExtractor(config.get(NAME));
    }
}
