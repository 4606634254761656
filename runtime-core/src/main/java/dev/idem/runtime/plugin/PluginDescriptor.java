package dev.idem.runtime.plugin;

import dev.idem.runtime.config.PluginSpecs.Kind;
import java.util.Objects;

/**
 * What discovery found for one provider, for logs and the {@code idem plugins} listing.
 *
 * @param kind what the provider creates
 * @param id the id users write in the configuration ({@code store.type: redis})
 * @param className the provider's class
 * @param version the implementation version of the provider's JAR, or {@code "unknown"}
 * @param location the JAR file or class directory the provider was loaded from, or {@code "unknown"}
 */
public record PluginDescriptor(Kind kind, String id, String className, String version, String location) {

    public PluginDescriptor {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(className, "className");
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(location, "location");
    }
}
