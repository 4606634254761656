package dev.idem.runtime.config;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Validates one YAML section against a {@link ConfigSpec}: matches the section's (possibly
 * nested) keys to declared dotted names, resolves placeholders, parses each value by its key's
 * type, applies defaults and reports missing, unknown and invalid keys.
 *
 * <p>Nesting and dots are interchangeable: {@code retry: {max-attempts: 3}} and
 * {@code retry.max-attempts: 3} both give {@code retry.max-attempts}. A {@link ConfigKey.Type#MAP}
 * key swallows its whole subtree. A YAML null ({@code key:} with nothing) counts as absent.
 *
 * <p>Not thread-safe: it reports into one load's {@link Problems}.
 */
final class SectionValidator {

    /**
     * @param config the validated section, or {@code null} when it had a problem (reported)
     * @param structured the raw values of the structured keys the caller validates itself
     */
    record Result(SectionConfig config, Map<String, Object> structured) {
    }

    private final EnvResolver env;
    private final Problems problems;

    SectionValidator(EnvResolver env, Problems problems) {
        this.env = env;
        this.problems = problems;
    }

    /** Validates a section with only declared keys. */
    SectionConfig validate(Object section, String path, ConfigSpec spec) {
        return validate(section, path, spec, List.of()).config();
    }

    /**
     * Validates a section that may also hold {@code structured} top-level keys, which are not
     * in the spec (they are not plain values) but are accepted and handed back raw.
     *
     * @param section the raw YAML subtree: a map, or {@code null} for an absent or empty section
     * @param path where the section lives, e.g. {@code pipelines.orders}
     */
    Result validate(Object section, String path, ConfigSpec spec, List<String> structured) {
        int before = problems.count();
        Walk walk = new Walk(path, spec, structured);
        if (section instanceof Map<?, ?> map) {
            walk.walk(map, "");
        } else if (section != null) {
            problems.invalid(path, Problems.show(section), "must be a section with keys " + walk.localNames(""));
            return new Result(null, Map.of());
        }
        Map<String, Object> values = new LinkedHashMap<>();
        Set<String> given = new HashSet<>();
        for (ConfigKey<?> key : spec.keys()) {
            values.put(key.name(), walk.value(key, given));
        }
        SectionConfig config = problems.count() == before ? new SectionConfig(path, spec, values, given) : null;
        return new Result(config, walk.structuredRaw);
    }

    /** One section's traversal: what the user wrote for each declared key. */
    private final class Walk {
        private final String path;
        private final ConfigSpec spec;
        private final List<String> structured;
        private final Map<String, Object> raw = new LinkedHashMap<>();
        private final Map<String, Object> structuredRaw = new LinkedHashMap<>();

        Walk(String path, ConfigSpec spec, List<String> structured) {
            this.path = path;
            this.spec = spec;
            this.structured = structured;
        }

        void walk(Map<?, ?> tree, String prefix) {
            for (Map.Entry<?, ?> e : tree.entrySet()) {
                String local = String.valueOf(e.getKey());
                String name = prefix.isEmpty() ? local : prefix + "." + local;
                Object value = e.getValue();
                ConfigKey<?> key = spec.key(name);
                ConfigKey<?> enclosingMap = enclosingMap(name);
                if (structured.contains(name)) {
                    structuredRaw.put(name, value);
                } else if (key != null) {
                    give(key, value);
                } else if (enclosingMap != null) {
                    giveMapEntry(enclosingMap, name.substring(enclosingMap.name().length() + 1), value);
                } else if (isSection(name)) {
                    if (value instanceof Map<?, ?> sub) {
                        walk(sub, name);
                    } else if (value != null) {
                        problems.invalid(path(name), Problems.show(value),
                                "must be a section with keys " + localNames(name));
                    }
                } else {
                    problems.unknownKey(path(name), local, local.contains(".") ? relativeNames(prefix) : localNames(prefix));
                }
            }
        }

        private void give(ConfigKey<?> key, Object value) {
            if (!raw.containsKey(key.name())) {
                // Copied so that flat "client.x: 1" entries can be merged into it later.
                raw.put(key.name(), key.type() == ConfigKey.Type.MAP && value instanceof Map<?, ?> m
                        ? new LinkedHashMap<>(m) : value);
            } else if (key.type() == ConfigKey.Type.MAP && value instanceof Map<?, ?> m) {
                m.forEach((k, v) -> giveMapEntry(key, String.valueOf(k), v));
            } else {
                givenTwice(key.name());
            }
        }

        @SuppressWarnings("unchecked")
        private void giveMapEntry(ConfigKey<?> key, String setting, Object value) {
            Object previous = raw.get(key.name());
            if (previous == null) {
                previous = new LinkedHashMap<String, Object>();
                raw.put(key.name(), previous);
            }
            if (!(previous instanceof Map<?, ?>) || ((Map<Object, Object>) previous).putIfAbsent(setting, value) != null) {
                givenTwice(key.name() + "." + setting);
            }
        }

        private void givenTwice(String name) {
            problems.add("Key " + path(name) + " is given twice; keep one");
        }

        /** The parsed value of a key, its default, or null (a problem is reported if it is wrong). */
        Object value(ConfigKey<?> key, Set<String> given) {
            String keyPath = path(key.name());
            Object resolved = raw.containsKey(key.name()) ? env.resolve(raw.get(key.name()), keyPath) : null;
            if (resolved == EnvResolver.UNRESOLVED) {
                return null;
            }
            if (key.type() == ConfigKey.Type.MAP) {
                resolved = withoutNulls(resolved);
            }
            if (resolved == null) {
                if (key.isRequired()) {
                    problems.missing(keyPath, null);
                }
                return key.defaultValue();
            }
            try {
                Object value = key.parse(resolved);
                given.add(key.name());
                return value;
            } catch (IllegalArgumentException e) {
                String rule = e.getMessage() != null ? e.getMessage() : "must be " + key.describeAccepted();
                problems.invalid(keyPath, Masking.showRaw(key, resolved), rule);
                return null;
            }
        }

        private ConfigKey<?> enclosingMap(String name) {
            for (ConfigKey<?> key : spec.keys()) {
                if (key.type() == ConfigKey.Type.MAP && name.startsWith(key.name() + ".")) {
                    return key;
                }
            }
            return null;
        }

        private boolean isSection(String name) {
            return spec.names().stream().anyMatch(n -> n.startsWith(name + "."));
        }

        /** The names accepted directly under {@code prefix}: "retry" under the pipeline, not "retry.max-attempts". */
        List<String> localNames(String prefix) {
            Set<String> names = new LinkedHashSet<>();
            for (String relative : relativeNames(prefix)) {
                int dot = relative.indexOf('.');
                names.add(dot < 0 ? relative : relative.substring(0, dot));
            }
            return new ArrayList<>(names);
        }

        /** The full names of the declared keys under {@code prefix}, relative to it. */
        private List<String> relativeNames(String prefix) {
            List<String> names = new ArrayList<>();
            for (String name : spec.names()) {
                if (prefix.isEmpty()) {
                    names.add(name);
                } else if (name.startsWith(prefix + ".")) {
                    names.add(name.substring(prefix.length() + 1));
                }
            }
            for (String name : structured) {
                if (prefix.isEmpty()) {
                    names.add(name);
                } else if (name.startsWith(prefix + ".")) {
                    names.add(name.substring(prefix.length() + 1));
                }
            }
            return names;
        }

        private String path(String name) {
            return path + "." + name;
        }
    }

    /** Null settings inside a MAP subtree count as absent, like any other YAML null. */
    private static Object withoutNulls(Object value) {
        if (!(value instanceof Map<?, ?> map)) {
            return value;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        map.forEach((k, v) -> {
            Object pruned = withoutNulls(v);
            if (pruned != null) {
                out.put(String.valueOf(k), pruned);
            }
        });
        return out;
    }
}
