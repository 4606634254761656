package dev.idem.runtime.config;

import static dev.idem.runtime.config.RuntimeConfigSpecs.TYPE;

import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Validates the sections that select a plugin by id: {@code broker} and {@code store}
 * ({@code type} plus a section named after the id) and the entries of a pipeline's {@code id}
 * list ({@code type} plus the extractor's keys side by side).
 *
 * <p>Not thread-safe: it reports into one load's {@link Problems}.
 */
final class PluginSelector {

    private record Selected(String id, ConfigSpec spec) {
    }

    private final PluginSpecs plugins;
    private final SectionValidator validator;
    private final EnvResolver env;
    private final Problems problems;

    PluginSelector(PluginSpecs plugins, SectionValidator validator, EnvResolver env, Problems problems) {
        this.plugins = plugins;
        this.validator = validator;
        this.env = env;
        this.problems = problems;
    }

    /**
     * Validates {@code broker} or {@code store}: {@code {type: redis, redis: {...}}}, leaving the runtime's own keys
     * of the section ({@code own}, such as {@code store.key-digest}) to the caller.
     *
     * @return the selection, or {@code null} when anything in it was wrong (reported)
     */
    PluginSection selectSection(Object raw, String path, Kind kind, ConfigSpec own) {
        if (raw == null) {
            problems.missing(path + "." + TYPE.name(), "the " + kind.label() + " to use. Available: " + plugins.ids(kind));
            return null;
        }
        if (!(raw instanceof Map<?, ?> section)) {
            problems.invalid(path, Problems.show(raw), "must be a section with a type, e.g. {type: "
                    + example(kind) + "}");
            return null;
        }
        Selected selected = select(section, path, kind);
        Object typed = section.get(TYPE.name());
        for (Object k : section.keySet()) {
            String key = String.valueOf(k);
            if (key.equals(TYPE.name()) || own.names().contains(key) || selected != null && key.equals(selected.id())) {
                continue;
            }
            if (selected == null && (key.equals(typed) || plugins.ids(kind).contains(key))) {
                continue; // Cannot tell whether it applies until the type is fixed; the type is already reported.
            }
            if (plugins.ids(kind).contains(key)) {
                problems.add("Section " + path + "." + key + " does not apply: " + path + ".type is '" + selected.id()
                        + "'. Remove it, or set " + path + ".type: " + key);
            } else {
                List<String> accepted = new ArrayList<>(List.of(TYPE.name()));
                accepted.addAll(own.names());
                if (selected != null) {
                    accepted.add(selected.id());
                } else {
                    accepted.addAll(plugins.ids(kind));
                }
                problems.unknownKey(path + "." + key, key, accepted);
            }
        }
        if (selected == null) {
            return null;
        }
        SectionConfig config = validator.validate(section.get(selected.id()), path + "." + selected.id(), selected.spec());
        return checkedByPlugin(kind, selected.id(), config);
    }

    /**
     * Validates a pipeline's {@code id} list, or supplies the default (the {@code message-id}
     * header) when it is absent.
     *
     * @return the extractors in order, or {@code null} when anything was wrong (reported)
     */
    List<PluginSection> idExtractors(Object raw, String path) {
        Kind kind = Kind.ID_EXTRACTOR;
        if (raw == null) {
            if (plugins.spec(kind, RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR).isEmpty()) {
                problems.missing(path, "the default (the message-id header) needs the '"
                        + RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR + "' ID extractor, which is not installed."
                        + " Available: " + plugins.ids(kind) + ". List the extractors to use, each with a type");
                return null;
            }
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put(TYPE.name(), RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR);
            entry.putAll(RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR_SETTINGS);
            // Validated like a written entry, so an extractor whose keys changed fails here, not at runtime.
            raw = List.of(entry);
        }
        if (!(raw instanceof List<?> entries)) {
            problems.invalid(path, Problems.show(raw), "must be a list of ID extractors, each with a type, e.g. "
                    + "[{type: header, name: message-id}]");
            return null;
        }
        if (entries.isEmpty()) {
            problems.invalid(path, "[]", "must list at least one ID extractor");
            return null;
        }
        List<PluginSection> out = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            out.add(selectEntry(entries.get(i), path + "[" + i + "]", kind));
        }
        return out.contains(null) ? null : out;
    }

    private PluginSection selectEntry(Object raw, String path, Kind kind) {
        if (!(raw instanceof Map<?, ?> entry)) {
            problems.invalid(path, Problems.show(raw), "must be an entry with a type and that "
                    + kind.label() + "'s keys, e.g. {type: " + example(kind) + "}");
            return null;
        }
        Selected selected = select(entry, path, kind);
        if (selected == null) {
            return null;
        }
        Map<Object, Object> settings = new LinkedHashMap<>(entry);
        settings.remove(TYPE.name());
        SectionConfig config = validator.validate(settings, path, selected.spec());
        return checkedByPlugin(kind, selected.id(), config);
    }

    /**
     * Runs the plugin's own checks across its keys once the keys are valid, so what its {@code create} would
     * refuse is reported now, with every other problem, by {@code check} as by a start.
     *
     * @return the selection, or {@code null} when the keys or the plugin found anything wrong (reported)
     */
    private PluginSection checkedByPlugin(Kind kind, String id, SectionConfig config) {
        if (config == null) {
            return null;
        }
        List<ConfigProblem> found = plugins.validate(kind, id, config);
        found.forEach(problem -> problems.add(problem.message()));
        return found.isEmpty() ? new PluginSection(id, config) : null;
    }

    /** Reads {@code type} and finds its spec; {@code null} when it is missing, wrong or unknown (reported). */
    private Selected select(Map<?, ?> section, String path, Kind kind) {
        String typePath = path + "." + TYPE.name();
        Object raw = env.resolve(section.get(TYPE.name()), typePath);
        if (raw == EnvResolver.UNRESOLVED) {
            return null;
        }
        if (raw == null) {
            problems.missing(typePath, "the " + kind.label() + " to use. Available: " + plugins.ids(kind));
            return null;
        }
        String id;
        try {
            id = TYPE.parse(raw);
        } catch (IllegalArgumentException e) {
            problems.invalid(typePath, Problems.show(raw), e.getMessage());
            return null;
        }
        Optional<ConfigSpec> spec = plugins.spec(kind, id);
        if (spec.isEmpty()) {
            problems.unknownPlugin(kind, id, typePath, plugins.ids(kind));
            return null;
        }
        return new Selected(id, spec.get());
    }

    private String example(Kind kind) {
        return plugins.ids(kind).isEmpty() ? "..." : plugins.ids(kind).first();
    }
}
