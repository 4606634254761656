package dev.idem.runtime.config;

import dev.idem.spi.PluginConfig;
import java.util.Objects;

/**
 * A configuration section that selects a plugin by id and carries its validated settings:
 * {@code broker}, {@code store}, or one entry of a pipeline's {@code id} list.
 *
 * @param type the provider id ({@code broker.type})
 * @param config the validated settings of that provider
 */
public record PluginSection(String type, PluginConfig config) {

    public PluginSection {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(config, "config");
    }
}
