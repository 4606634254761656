package dev.idem.spi;

/**
 * The validated configuration of one plugin instance, as the runtime hands it to a
 * provider's {@code create} method. Every declared key has a value here: the user's,
 * or the default.
 *
 * <p>Immutable and thread-safe.
 */
public interface PluginConfig {

    /**
     * The value of a declared key.
     *
     * @return the user's value or the default; {@code null} only for an optional key without
     *         default that the user left out
     * @throws IllegalArgumentException if the key was not declared in the plugin's spec
     */
    <T> T get(ConfigKey<T> key);

    /** Where this configuration lives in the user's file ({@code store.redis}), for error messages. */
    String path();
}
