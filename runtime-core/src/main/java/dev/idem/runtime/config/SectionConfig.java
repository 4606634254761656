package dev.idem.runtime.config;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.StringJoiner;

/**
 * The validated values of one section against one {@link ConfigSpec}: a plugin's settings,
 * a pipeline's, or the runtime's. Every declared key has an entry: the user's value, the
 * default, or {@code null} for an optional key left out.
 *
 * <p>Immutable and thread-safe. {@link #toString()} masks secrets, so it is safe to log.
 */
final class SectionConfig implements PluginConfig {

    private final String path;
    private final ConfigSpec spec;
    private final Map<String, Object> values;
    private final Set<String> given;

    /**
     * @param values by key name, in spec order; may hold nulls
     * @param given the names the user wrote (the rest are defaults)
     */
    SectionConfig(String path, ConfigSpec spec, Map<String, Object> values, Set<String> given) {
        this.path = Objects.requireNonNull(path, "path");
        this.spec = Objects.requireNonNull(spec, "spec");
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
        this.given = Set.copyOf(given);
    }

    @Override
    public <T> T get(ConfigKey<T> key) {
        ConfigKey<?> declared = spec.key(key.name());
        if (declared == null || declared.type() != key.type()) {
            throw new IllegalArgumentException("Config key " + key + " is not declared for " + path
                    + ". Declared: " + spec.names());
        }
        return key.javaType().cast(values.get(key.name()));
    }

    @Override
    public String path() {
        return path;
    }

    ConfigSpec spec() {
        return spec;
    }

    /** The value of a declared key by name; {@code null} when absent. */
    Object value(String name) {
        return values.get(name);
    }

    /** Whether the user wrote the key, as opposed to it taking its default. */
    boolean isGiven(String name) {
        return given.contains(name);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SectionConfig other && other.path.equals(path) && other.values.equals(values);
    }

    @Override
    public int hashCode() {
        return Objects.hash(path, values);
    }

    /** {@code store.redis{url=redis://localhost:6379, password=******}}. */
    @Override
    public String toString() {
        StringJoiner s = new StringJoiner(", ", path + "{", "}");
        for (ConfigKey<?> key : spec.keys()) {
            Object value = values.get(key.name());
            if (value != null) {
                s.add(key.name() + "=" + Masking.display(key, value));
            }
        }
        return s.toString();
    }
}
