package dev.idem.spi;

import java.util.Collection;
import java.util.Objects;

/**
 * One thing wrong with a plugin's configuration that its keys alone cannot tell (keys that contradict
 * each other, a value its client library refuses), as a provider's {@code validate} reports it.
 *
 * @param path the key the problem is about, e.g. {@code broker.rabbitmq.client.heartbeat}; the section's
 *        path ({@link PluginConfig#path()}) when it concerns several keys
 * @param message the whole sentence a person reads, naming the path, the offending value (secrets masked)
 *        and what is accepted, e.g. {@code Invalid value '7x' for broker.rabbitmq.client.heartbeat: ...}
 */
public record ConfigProblem(String path, String message) {

    public ConfigProblem {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(message, "message");
    }

    /** {@code Invalid value '<shownValue>' for <path>: <rule>}, worded as the runtime's own checks are. */
    public static ConfigProblem invalid(String path, String shownValue, String rule) {
        return new ConfigProblem(path, "Invalid value '" + shownValue + "' for " + path + ": " + rule);
    }

    /**
     * For a provider's {@code create}, which must refuse what its {@code validate} reports.
     *
     * @throws ConfigException carrying every problem's message, if there is any
     */
    public static void throwIfAny(Collection<ConfigProblem> problems) {
        if (!problems.isEmpty()) {
            throw new ConfigException(problems.stream().map(ConfigProblem::message).toList());
        }
    }

    @Override
    public String toString() {
        return message;
    }
}
