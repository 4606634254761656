package dev.idem.testkit;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A {@link PluginConfig} for plugin tests, so a provider's {@code create} can be called without the
 * runtime: every key of the plugin's {@link ConfigSpec} has its default unless a test
 * {@linkplain #with(String, Object) sets} it.
 *
 * <pre>{@code
 * DedupStoreProvider provider = new CaffeineDedupStoreProvider();
 * PluginConfig config = TestPluginConfig.defaults("store.caffeine", provider.configSpec())
 *         .with("maximum-size", 10);
 * DedupStore store = provider.create(config, new StoreContext(ticker));
 * }</pre>
 *
 * <p>Values given to {@link #with} go through {@link ConfigKey#parse}, as a value read from YAML
 * does, so a key's own rules reject them the way the runtime would. Immutable and thread-safe.
 */
public final class TestPluginConfig implements PluginConfig {

    private final String path;
    private final ConfigSpec spec;
    private final Map<String, Object> values;

    private TestPluginConfig(String path, ConfigSpec spec, Map<String, Object> values) {
        this.path = path;
        this.spec = spec;
        this.values = values;
    }

    /**
     * A configuration holding every key's default; a required key, or an optional key without
     * default, reads {@code null} until set.
     *
     * @param path where this section would be in the user's file, e.g. {@code store.caffeine}
     */
    public static TestPluginConfig defaults(String path, ConfigSpec spec) {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(spec, "spec");
        Map<String, Object> values = new HashMap<>();
        for (ConfigKey<?> key : spec.keys()) {
            if (key.defaultValue() != null) {
                values.put(key.name(), key.defaultValue());
            }
        }
        return new TestPluginConfig(path, spec, Map.copyOf(values));
    }

    /**
     * A copy with {@code name} set to {@code rawValue}, written as in YAML: a string, number,
     * boolean, list or map ({@code "30s"}, {@code 10}, {@code List.of("a")}).
     *
     * @throws IllegalArgumentException if the key is not declared, or the value breaks its rules
     */
    public TestPluginConfig with(String name, Object rawValue) {
        ConfigKey<?> key = declared(name);
        Object value;
        try {
            value = key.parse(rawValue);
        } catch (IllegalArgumentException e) {
            Object shown = key.type() == ConfigKey.Type.SECRET ? "******" : rawValue;
            throw new IllegalArgumentException("Invalid value '" + shown + "' for " + path + "." + name
                    + ": " + e.getMessage(), e);
        }
        Map<String, Object> changed = new HashMap<>(values);
        changed.put(name, value);
        return new TestPluginConfig(path, spec, Map.copyOf(changed));
    }

    @Override
    public <T> T get(ConfigKey<T> key) {
        declared(key.name());
        return key.javaType().cast(values.get(key.name()));
    }

    @Override
    public String path() {
        return path;
    }

    private ConfigKey<?> declared(String name) {
        ConfigKey<?> key = spec.key(name);
        if (key == null) {
            throw new IllegalArgumentException("Key '" + name + "' is not declared under " + path
                    + ". Declared: " + spec.names());
        }
        return key;
    }

    @Override
    public String toString() {
        return "TestPluginConfig[" + path + "]";
    }
}
