package dev.idem.runtime.config;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.Secret;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Turns validated values into what may be shown to a person: secrets masked, credentials inside URLs
 * masked, durations and enums written the way a user writes them. Stateless.
 */
final class Masking {

    static final String MASK = "******";

    /*
     * MAP keys pass native client settings through untyped, so a password can hide in one
     * (sasl.jaas.config, ssl.key.password). Their names are the only clue; masking a harmless
     * setting by mistake costs less than printing a password.
     */
    private static final Pattern SENSITIVE = Pattern.compile(
            "(?i).*(password|passwd|pwd|secret|token|credential|jaas|private|auth|api[-_.]?key|user\\.info).*");

    private Masking() {
    }

    /** Whether a native setting's name suggests it holds a secret. */
    static boolean isSensitive(String settingName) {
        return SENSITIVE.matcher(settingName).matches();
    }

    /**
     * A validated value as a plain YAML-friendly object: a string, number, boolean, list or
     * map, with secrets masked; {@code null} stays {@code null}.
     */
    static Object display(ConfigKey<?> key, Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof Secret || key.type() == ConfigKey.Type.SECRET) {
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
        return key.type() == ConfigKey.Type.SECRET ? MASK : Secret.maskCredentials(Problems.show(raw));
    }
}
