package dev.idem.runtime.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The whole validated configuration: one broker, one store, the pipelines.
 *
 * @param broker the selected broker adapter and its settings
 * @param store the selected dedup store and its settings
 * @param keyDigest what the store keeps of each key ({@code store.key-digest}), for every pipeline
 * @param pipelines the pipelines by name, in file order
 * @param runtime process-wide settings
 */
public record IdemConfig(PluginSection broker, PluginSection store, KeyDigest keyDigest,
        Map<String, PipelineConfig> pipelines, RuntimeSettings runtime) {

    public IdemConfig {
        Objects.requireNonNull(broker, "broker");
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(keyDigest, "keyDigest");
        pipelines = Collections.unmodifiableMap(new LinkedHashMap<>(pipelines));
        Objects.requireNonNull(runtime, "runtime");
    }
}
