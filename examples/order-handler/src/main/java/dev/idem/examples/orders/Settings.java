package dev.idem.examples.orders;

import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * Reads the handlers' settings: an environment variable first, then a system property. Handlers are
 * created by the runtime through their no-arg constructor, so they cannot take settings from
 * {@code conf/idem.yaml}; the environment (or {@code JAVA_OPTS=-D...}) is how a deployment sets them.
 */
final class Settings {

    private final Map<String, String> env;
    private final Properties properties;

    Settings(Map<String, String> env, Properties properties) {
        this.env = env;
        this.properties = properties;
    }

    /** The process's environment and system properties. */
    static Settings system() {
        return new Settings(System.getenv(), System.getProperties());
    }

    /** The variable's value, else the property's; blank counts as absent. */
    Optional<String> get(String envName, String propertyName) {
        String value = env.get(envName);
        if (value == null || value.isBlank()) {
            value = properties.getProperty(propertyName);
        }
        return value == null || value.isBlank() ? Optional.empty() : Optional.of(value.trim());
    }

    /**
     * A yes/no setting, {@code false} when absent.
     *
     * @throws IllegalArgumentException when the value is neither {@code true} nor {@code false}
     */
    boolean flag(String envName, String propertyName) {
        Optional<String> value = get(envName, propertyName);
        if (value.isEmpty()) {
            return false;
        }
        return switch (value.get().toLowerCase(java.util.Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("Invalid value '" + value.get() + "' for " + envName
                    + " (or -D" + propertyName + "): must be true or false");
        };
    }
}
