package dev.idem.spi;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The configuration keys a plugin (or the runtime) declares, in declaration order.
 * The runtime rejects any key a user writes that is not declared here.
 *
 * <p>Immutable and thread-safe once built.
 */
public final class ConfigSpec {

    private static final ConfigSpec EMPTY = new ConfigSpec(Map.of());

    private final Map<String, ConfigKey<?>> keys;

    private ConfigSpec(Map<String, ConfigKey<?>> keys) {
        this.keys = keys;
    }

    /** A spec with no keys, for plugins that take no configuration. */
    public static ConfigSpec empty() {
        return EMPTY;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The declared keys, in declaration order. */
    public Collection<ConfigKey<?>> keys() {
        return keys.values();
    }

    /** The key with that name, or {@code null}. */
    public ConfigKey<?> key(String name) {
        return keys.get(name);
    }

    public List<String> names() {
        return new ArrayList<>(keys.keySet());
    }

    /** Collects key declarations; a name declared twice is a programming error. */
    public static final class Builder {
        private final Map<String, ConfigKey<?>> keys = new LinkedHashMap<>();

        private Builder() {
        }

        public Builder define(ConfigKey<?> key) {
            if (keys.putIfAbsent(key.name(), key) != null) {
                throw new IllegalArgumentException("Config key '" + key.name() + "' is declared twice");
            }
            return this;
        }

        public ConfigSpec build() {
            return new ConfigSpec(Collections.unmodifiableMap(new LinkedHashMap<>(keys)));
        }
    }
}
