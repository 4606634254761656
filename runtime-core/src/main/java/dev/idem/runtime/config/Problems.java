package dev.idem.runtime.config;

import dev.idem.runtime.internal.Suggestions;
import dev.idem.spi.ConfigException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Collects every configuration problem of one load, so a person sees them all in one run,
 * and owns the wording of each kind so messages read the same everywhere.
 * Not thread-safe: one instance per load.
 */
final class Problems {

    private static final int MAX_SHOWN_VALUE = 120;

    private final List<String> problems = new ArrayList<>();

    /** {@code Invalid value '-5s' for pipelines.orders.lease: must be at least 1s}. */
    void invalid(String path, String shownValue, String rule) {
        problems.add("Invalid value '" + shownValue + "' for " + path + ": " + rule);
    }

    /** {@code Unknown key pipelines.orders.leese. Did you mean 'lease'? Accepted: [...]}. */
    void unknownKey(String path, String typed, Collection<String> accepted) {
        StringBuilder s = new StringBuilder("Unknown key ").append(path).append('.');
        Suggestions.closest(typed, accepted).ifPresent(best -> s.append(" Did you mean '").append(best).append("'?"));
        s.append(" Accepted: ").append(accepted);
        problems.add(s.toString());
    }

    /** {@code Missing required key broker.type}, with an optional hint after a colon. */
    void missing(String path, String hint) {
        problems.add("Missing required key " + path + (hint == null ? "" : ": " + hint));
    }

    /** {@code No dedup store with id 'reds' (store.type). Available: [caffeine, jdbc, redis]...}. */
    void unknownPlugin(PluginSpecs.Kind kind, String id, String path, Collection<String> available) {
        StringBuilder s = new StringBuilder("No ").append(kind.label()).append(" with id '").append(id)
                .append("' (").append(path).append(").");
        Suggestions.closest(id, available).ifPresent(best -> s.append(" Did you mean '").append(best).append("'?"));
        s.append(" Available: ").append(available)
                .append(". If it is a plugin, is its folder or JAR missing from plugins/?");
        problems.add(s.toString());
    }

    /** A problem whose wording does not fit the kinds above. */
    void add(String problem) {
        problems.add(problem);
    }

    /** How many problems so far; a caller compares counts to learn whether its part added any. */
    int count() {
        return problems.size();
    }

    /** @throws ConfigException carrying every problem collected, if there is any */
    void throwIfAny() {
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
    }

    /**
     * How a raw YAML value appears in a message: as written, on one line, cut when long,
     * so a pasted certificate does not flood the terminal.
     */
    static String show(Object raw) {
        String s;
        if (raw instanceof Map<?, ?> map) {
            // Keys only: a section's values may include secrets the message has no business showing.
            s = map.isEmpty() ? "{}" : "{" + String.join(", ", map.keySet().stream().map(String::valueOf)
                    .map(k -> k + ": ...").toList()) + "}";
        } else if (raw instanceof List<?> list) {
            s = list.toString();
        } else {
            s = String.valueOf(raw);
        }
        s = s.replace('\n', ' ').replace('\r', ' ');
        return s.length() > MAX_SHOWN_VALUE ? s.substring(0, MAX_SHOWN_VALUE) + "..." : s;
    }
}
