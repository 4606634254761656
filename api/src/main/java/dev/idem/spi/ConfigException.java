package dev.idem.spi;

import dev.idem.api.IdemException;
import java.util.List;

/**
 * The configuration is invalid. Carries every problem found, each naming the key's path,
 * the offending value and what is accepted, so one run shows them all.
 */
public class ConfigException extends IdemException {

    private static final long serialVersionUID = 1L;

    private final List<String> problems;

    public ConfigException(List<String> problems) {
        super(render(problems));
        this.problems = List.copyOf(problems);
    }

    public ConfigException(String problem) {
        this(List.of(problem));
    }

    /** Each problem on its own, e.g. {@code Invalid value '-5s' for store.redis.lease: must be at least 1s}. */
    public List<String> problems() {
        return problems;
    }

    private static String render(List<String> problems) {
        if (problems.size() == 1) {
            return "Invalid configuration: " + problems.get(0);
        }
        StringBuilder s = new StringBuilder("Invalid configuration (" + problems.size() + " problems):");
        for (String p : problems) {
            s.append(System.lineSeparator()).append("  - ").append(p);
        }
        return s.toString();
    }
}
