package dev.idem.runtime.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Replaces {@code ${VAR}} and {@code ${VAR:-default}} in string values with environment
 * variables; <code>$${</code> writes a literal <code>${</code>.
 *
 * <p>Rules: the default applies when the variable is unset or empty (as in a shell); a default
 * cannot contain <code>}</code>; a substituted value is not scanned again, so a variable holding
 * {@code ${...}} stays literal; a value that was only placeholders and comes out empty counts as
 * absent, so {@code password: ${PASSWORD:-}} leaves an optional key unset. Every scalar arrives
 * as the text written ({@link ConfigLoader} applies no YAML typing), and substituted text is
 * parsed by the key's type like any other.
 *
 * <p>Not thread-safe: it reports into one load's {@link Problems}.
 */
final class EnvResolver {

    /** Returned instead of a value when a placeholder could not be resolved (already reported). */
    static final Object UNRESOLVED = new Object() {
        @Override
        public String toString() {
            return "<unresolved>";
        }
    };

    private static final Pattern VARIABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private final Map<String, String> env;
    private final Problems problems;

    EnvResolver(Map<String, String> env, Problems problems) {
        this.env = Objects.requireNonNull(env, "env");
        this.problems = problems;
    }

    /**
     * Resolves placeholders in a raw YAML value, deeply for maps and lists.
     *
     * @param path where the value lives, for problems
     * @return the resolved value; {@code null} when it came out absent; {@link #UNRESOLVED} when a
     *         placeholder failed (every failure is reported, not only the first)
     */
    Object resolve(Object raw, String path) {
        if (raw instanceof String s) {
            return resolveString(s, path);
        }
        if (raw instanceof Map<?, ?> map) {
            Map<String, Object> out = new LinkedHashMap<>();
            boolean failed = false;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                Object v = resolve(e.getValue(), path + "." + e.getKey());
                failed |= v == UNRESOLVED;
                out.put(String.valueOf(e.getKey()), v);
            }
            return failed ? UNRESOLVED : out;
        }
        if (raw instanceof List<?> list) {
            List<Object> out = new ArrayList<>(list.size());
            boolean failed = false;
            for (int i = 0; i < list.size(); i++) {
                Object v = resolve(list.get(i), path + "[" + i + "]");
                failed |= v == UNRESOLVED;
                if (v != null) {
                    out.add(v);
                }
            }
            return failed ? UNRESOLVED : out;
        }
        return raw;
    }

    private Object resolveString(String text, String path) {
        if (!text.contains("${")) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.length());
        boolean failed = false;
        boolean onlyPlaceholders = true;
        int i = 0;
        while (i < text.length()) {
            if (text.startsWith("$${", i)) {
                out.append("${");
                onlyPlaceholders = false;
                i += 3;
            } else if (text.startsWith("${", i)) {
                int end = text.indexOf('}', i + 2);
                if (end < 0) {
                    problems.add("Unterminated placeholder in " + path + ": '${' without a closing '}'."
                            + " Write $${ for a literal ${");
                    return UNRESOLVED;
                }
                String value = lookup(text.substring(i + 2, end), path);
                if (value == null) {
                    failed = true;
                } else {
                    out.append(value);
                }
                i = end + 1;
            } else {
                out.append(text.charAt(i));
                onlyPlaceholders = false;
                i++;
            }
        }
        if (failed) {
            return UNRESOLVED;
        }
        return onlyPlaceholders && out.length() == 0 ? null : out.toString();
    }

    /** The value of one {@code NAME} or {@code NAME:-default} expression, or null when reported. */
    private String lookup(String expression, String path) {
        int sep = expression.indexOf(":-");
        String name = sep < 0 ? expression : expression.substring(0, sep);
        String fallback = sep < 0 ? null : expression.substring(sep + 2);
        if (!VARIABLE.matcher(name).matches()) {
            problems.add("Invalid placeholder '${" + expression + "}' in " + path
                    + ": must be ${NAME} or ${NAME:-default} where NAME is letters, digits and '_'."
                    + " Write $${ for a literal ${");
            return null;
        }
        String value = env.get(name);
        if (fallback != null && (value == null || value.isEmpty())) {
            return fallback;
        }
        if (value == null) {
            problems.add("Environment variable " + name + " is not set, for " + path
                    + ". Set it, or give a default: ${" + name + ":-default}");
        }
        return value;
    }
}
