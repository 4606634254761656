package dev.idem.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A handler's settings: the pipeline's {@code handler-settings} map from the configuration, handed to
 * {@link HandlerLifecycle#init}.
 *
 * <p>Nested YAML sections are flattened to dotted names, so {@code db: {url: ..., pool-size: 4}} and
 * {@code db.url: ...} both give {@code db.url}. Every value is a string: numbers and booleans as written,
 * a list as its items joined with commas (quote a value whose exact text matters: YAML reads {@code 1.10} as
 * the number {@code 1.1}). {@code ${VAR}} and {@code ${VAR:-default}} placeholders are already resolved; a
 * setting left empty ({@code name:}) or made of placeholders that come out empty (an unset
 * {@code ${VAR:-}}) is absent. Names are case-sensitive.
 *
 * <p>The typed getters throw {@link IllegalArgumentException} with a message that names the setting's
 * full path ({@code pipelines.orders.handler-settings.db.url}) and what is accepted; thrown from
 * {@code init}, it fails the start with that message. {@link #toString()} shows the names, never the
 * values, so the object is safe to log.
 *
 * <p>Immutable and thread-safe.
 */
public final class HandlerSettings {

    private final String pipeline;
    private final Map<String, String> values;

    private HandlerSettings(String pipeline, Map<String, String> values) {
        this.pipeline = pipeline;
        this.values = values;
    }

    /**
     * Settings as the runtime makes them; also how a test builds them for a handler.
     *
     * @param pipeline the pipeline's name, for messages
     * @param values by dotted name, in the order given; no null names or values
     * @throws NullPointerException if an argument, a name or a value is null
     */
    public static HandlerSettings of(String pipeline, Map<String, String> values) {
        Objects.requireNonNull(pipeline, "pipeline");
        Map<String, String> copy = new LinkedHashMap<>();
        values.forEach((name, value) -> copy.put(Objects.requireNonNull(name, "name"),
                Objects.requireNonNull(value, () -> "value of " + name)));
        return new HandlerSettings(pipeline, Collections.unmodifiableMap(copy));
    }

    /** The name of the pipeline these settings belong to. */
    public String pipeline() {
        return pipeline;
    }

    /** Every setting by dotted name, in configuration order; unmodifiable, empty when none is set. */
    public Map<String, String> asMap() {
        return values;
    }

    /** The names set, in configuration order. */
    public Set<String> names() {
        return values.keySet();
    }

    /** Where the setting lives in the configuration: {@code pipelines.<pipeline>.handler-settings.<name>}. */
    public String path(String name) {
        return "pipelines." + pipeline + ".handler-settings." + name;
    }

    /** The setting's value, or empty when it is not set. */
    public Optional<String> get(String name) {
        return Optional.ofNullable(values.get(name));
    }

    /**
     * The setting's value.
     *
     * @throws IllegalArgumentException naming its path when it is not set
     */
    public String require(String name) {
        String value = values.get(name);
        if (value == null) {
            throw new IllegalArgumentException("Missing handler setting " + path(name) + ": set it in the"
                    + " configuration, e.g. " + name + ": ${" + envName(name) + "}");
        }
        return value;
    }

    /**
     * The setting as {@code true} or {@code false} (any case), or {@code defaultValue} when it is not set.
     *
     * @throws IllegalArgumentException naming its path and the value when it is neither
     */
    public boolean getBoolean(String name, boolean defaultValue) {
        String value = values.get(name);
        if (value == null) {
            return defaultValue;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw invalid(name, value, "must be true or false");
        };
    }

    /**
     * The setting as a decimal integer, or {@code defaultValue} when it is not set.
     *
     * @throws IllegalArgumentException naming its path and the value when it is not an {@code int}
     */
    public int getInt(String name, int defaultValue) {
        String value = values.get(name);
        if (value == null) {
            return defaultValue;
        }
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw invalid(name, value, "must be an integer from " + Integer.MIN_VALUE + " to " + Integer.MAX_VALUE);
        }
    }

    private IllegalArgumentException invalid(String name, String value, String rule) {
        // The value is shown: a setting read as a flag or a number is not a secret, and seeing it is the quickest fix.
        return new IllegalArgumentException("Invalid value '" + value + "' for handler setting " + path(name) + ": "
                + rule);
    }

    /** {@code db.url} as the environment variable a deployment would name it: {@code DB_URL}. */
    private static String envName(String name) {
        return name.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_]", "_");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HandlerSettings other && other.pipeline.equals(pipeline) && other.values.equals(values);
    }

    @Override
    public int hashCode() {
        return Objects.hash(pipeline, values);
    }

    /** {@code HandlerSettings[pipeline=orders, names=[db.url, db.password]]}: names only, never values. */
    @Override
    public String toString() {
        return "HandlerSettings[pipeline=" + pipeline + ", names=" + values.keySet() + "]";
    }
}
