package dev.idem.runtime.config;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.Secret;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Turns validated values into what may be shown to a person: secrets masked (values of type {@code secret}, and
 * text under a name that says it is one, see {@link #namesASecret}), credentials inside URLs and connection
 * strings masked, durations and enums written the way a user writes them. Stateless.
 */
final class Masking {

    static final String MASK = "******";

    /*
     * MAP keys pass native client settings through untyped, so a password can hide in one
     * (sasl.jaas.config, ssl.key.password). Their names are the only clue; masking a harmless
     * setting by mistake costs less than printing a password.
     */
    private static final Pattern SENSITIVE = Pattern.compile(
            "(?i).*(password|passwd|pwd|passphrase|secret|token|credential|jaas|private|auth|api[-_.]?key"
                    + "|user\\.info).*");

    /*
     * A name that ends in one of these words names a secret, whatever type its key was declared with: a plugin
     * may declare signing-key or gpg-passphrase as a plain string. The -key names of messaging are routes, not
     * secrets, and stay readable.
     */
    private static final Pattern SECRET_NAME = Pattern.compile("(?i)(?:.*[-_.])?(password|passphrase|secret|key|token)");
    private static final Pattern ROUTE_NAME = Pattern.compile(
            "(?i)(?:.*[-_.])?(binding|routing|ordering|partition)[-_.]key");

    private Masking() {
    }

    /** Whether a native setting's name suggests it holds a secret. */
    static boolean isSensitive(String settingName) {
        return SENSITIVE.matcher(settingName).matches() || namesASecret(settingName);
    }

    /**
     * Whether a key's name ends in {@code password}, {@code passphrase}, {@code secret}, {@code key} or
     * {@code token} ({@code tls.key-passphrase}, {@code signing-key}, {@code api.token}), a route's key
     * ({@code binding-key}, {@code routing-key}, ...) excepted: its value is masked even if declared a string.
     */
    static boolean namesASecret(String name) {
        return SECRET_NAME.matcher(name).matches() && !ROUTE_NAME.matcher(name).matches();
    }

    /** Whether {@code key}'s values are never shown: a secret, or text under a name that says it is one. */
    private static boolean hidden(ConfigKey<?> key) {
        return key.type() == ConfigKey.Type.SECRET || (key.type() == ConfigKey.Type.STRING
                || key.type() == ConfigKey.Type.LIST) && namesASecret(key.name());
    }

    /**
     * A validated value as a plain YAML-friendly object: a string, number, boolean, list or
     * map, with secrets masked; {@code null} stays {@code null}.
     */
    static Object display(ConfigKey<?> key, Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof Secret || hidden(key)) {
            return MASK;
        }
        if (value instanceof Duration d) {
            return ConfigKey.formatDuration(d);
        }
        if (value instanceof Map<?, ?> map) {
            Map<String, String> shown = new LinkedHashMap<>();
            // Free-form settings (a handler's JDBC URL, a client's bootstrap address) may carry credentials in a URL too.
            map.forEach((k, v) -> shown.put(String.valueOf(k),
                    isSensitive(String.valueOf(k)) ? MASK : Secret.maskCredentials(String.valueOf(v))));
            return shown;
        }
        if (value instanceof List<?> list) {
            return List.copyOf(list);
        }
        if (value instanceof String text) {
            // A URL may carry a password in its user-info or parameters (amqp://user:pw@..., ?password=...).
            return Secret.maskCredentials(text);
        }
        return value;
    }

    /**
     * A raw (unvalidated) value as it may appear in an error message about {@code key}:
     * a secret's value is never shown, even when it is the one that is wrong.
     */
    static String showRaw(ConfigKey<?> key, Object raw) {
        return hidden(key) ? MASK : Secret.maskCredentials(Problems.show(raw));
    }
}
