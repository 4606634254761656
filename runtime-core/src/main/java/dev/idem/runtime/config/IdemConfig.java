package dev.idem.runtime.config;

import java.util.Map;
import java.util.Objects;

/**
 * The whole validated configuration: one broker, one store, the pipelines.
 *
 * @param broker the selected broker adapter and its settings
 * @param store the selected dedup store and its settings
 * @param pipelines the pipelines by name, in file order
 * @param runtime process-wide settings
 */
public record IdemConfig(PluginSection broker, PluginSection store, Map<String, PipelineConfig> pipelines,
        RuntimeSettings runtime) {

    public IdemConfig {
        Objects.requireNonNull(broker, "broker");
        Objects.requireNonNull(store, "store");
        pipelines = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(pipelines));
        Objects.requireNonNull(runtime, "runtime");
    }
}
