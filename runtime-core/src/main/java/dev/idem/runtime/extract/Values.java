package dev.idem.runtime.extract;

import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.PluginConfig;

/** Rules the built-in extractors share: what counts as a key, and how a bad setting is reported. */
final class Values {

    private Values() {
    }

    /**
     * {@code value}, or {@code null} when it is blank: an empty header or field is no key, and
     * treating it as one would make every such message a duplicate of the first.
     */
    static String present(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    /** {@code Invalid value 'x' for pipelines.orders.id[0].pointer: must start with '/'}, like the config loader. */
    static ConfigException invalid(PluginConfig config, ConfigKey<?> key, Object value, String reason) {
        return new ConfigException(problem(config, key, value, reason).message());
    }

    /** The problem {@link #invalid} throws, for a provider's {@code validate}. */
    static ConfigProblem problem(PluginConfig config, ConfigKey<?> key, Object value, String reason) {
        return ConfigProblem.invalid(config.path() + "." + key.name(), String.valueOf(value), reason);
    }
}
