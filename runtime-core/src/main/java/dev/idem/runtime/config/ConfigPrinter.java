package dev.idem.runtime.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Renders an effective {@link IdemConfig} as YAML, every default filled in and every secret
 * masked as {@code ******}: what {@code idem check} shows. Keys left out have no value
 * (optional, without default). Apart from masked secrets, the output loads back into an equal
 * configuration.
 *
 * <p>Stateless and thread-safe.
 */
public final class ConfigPrinter {

    private static final ObjectMapper YAML = new ObjectMapper(YAMLFactory.builder()
            .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
            .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
            .enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS)
            .enable(YAMLGenerator.Feature.INDENT_ARRAYS_WITH_INDICATOR)
            .build());

    private ConfigPrinter() {
    }

    /** The configuration as YAML text, secrets masked. */
    public static String print(IdemConfig config) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put(ConfigLoader.BROKER, pluginSection(config.broker()));
        Map<String, Object> store = pluginSection(config.store());
        Map<String, Object> storeOut = new LinkedHashMap<>();
        storeOut.put(RuntimeConfigSpecs.TYPE.name(), config.store().type());
        storeOut.put(RuntimeConfigSpecs.KEY_DIGEST.name(), config.keyDigest().configValue());
        storeOut.putAll(store);
        root.put(ConfigLoader.STORE, storeOut);
        Map<String, Object> pipelines = new LinkedHashMap<>();
        config.pipelines().forEach((name, p) -> pipelines.put(name, pipeline(p)));
        root.put(ConfigLoader.PIPELINES, pipelines);
        Map<String, Object> runtime = new LinkedHashMap<>();
        runtime.put(RuntimeConfigSpecs.SHUTDOWN_TIMEOUT.name(), config.runtime().shutdownTimeout());
        runtime.put(RuntimeConfigSpecs.SUMMARY_INTERVAL.name(), config.runtime().summaryInterval());
        runtime.put(RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name(), config.runtime().handlerCreateTimeout());
        runtime.put(RuntimeConfigSpecs.HTTP_ENABLED.name(), config.runtime().http().enabled());
        runtime.put(RuntimeConfigSpecs.HTTP_HOST.name(), config.runtime().http().host());
        runtime.put(RuntimeConfigSpecs.HTTP_PORT.name(), config.runtime().http().port());
        root.put(ConfigLoader.RUNTIME, nested(RuntimeConfigSpecs.RUNTIME, runtime::get));
        try {
            return YAML.writeValueAsString(root);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e); // Plain maps, lists and scalars always serialise.
        }
    }

    private static Map<String, Object> pluginSection(PluginSection section) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put(RuntimeConfigSpecs.TYPE.name(), section.type());
        out.put(section.type(), settings(section.config()));
        return out;
    }

    private static Map<String, Object> pipeline(PipelineConfig p) {
        Map<String, Object> values = PipelineBinder.values(p);
        Map<String, Object> settings = nested(RuntimeConfigSpecs.PIPELINE, values::get);
        // The documented layout: what is consumed, by which handler, keyed how; then the tuning.
        Map<String, Object> out = new LinkedHashMap<>();
        for (String first : List.of(RuntimeConfigSpecs.SOURCE.name(), RuntimeConfigSpecs.HANDLER.name(),
                RuntimeConfigSpecs.HANDLER_SETTINGS.name())) {
            if (settings.containsKey(first)) {
                out.put(first, settings.get(first));
            }
        }
        out.put(RuntimeConfigSpecs.ID, idExtractors(p.idExtractors()));
        if (!p.orderingKey().isEmpty()) {
            out.put(RuntimeConfigSpecs.ORDERING_KEY, idExtractors(p.orderingKey()));
        }
        out.putAll(settings); // Keys already placed keep their place.
        if (p.sequence() != null && out.get("sequence") instanceof Map<?, ?> sequence) {
            Map<String, Object> withLists = new LinkedHashMap<>();
            withLists.put("aggregate", idExtractors(p.sequence().aggregate()));
            withLists.put("number", idExtractors(p.sequence().number()));
            sequence.forEach((k, v) -> withLists.put(String.valueOf(k), v));
            out.put("sequence", withLists);
        }
        return out;
    }

    private static List<Object> idExtractors(List<PluginSection> extractors) {
        List<Object> out = new ArrayList<>();
        for (PluginSection extractor : extractors) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put(RuntimeConfigSpecs.TYPE.name(), extractor.type());
            Object settings = settings(extractor.config());
            if (settings instanceof Map<?, ?> map) {
                map.forEach((k, v) -> entry.put(String.valueOf(k), v));
            }
            out.add(entry);
        }
        return out;
    }

    private static Object settings(PluginConfig config) {
        if (config instanceof SectionConfig section) {
            return nested(section.spec(), section::value);
        }
        // Built in code, not loaded: its keys cannot be listed, and its toString may not mask.
        return Map.of();
    }

    /** The non-null values of a spec's keys, dotted names nested into sections, ready for YAML. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> nested(ConfigSpec spec, Function<String, Object> values) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (ConfigKey<?> key : spec.keys()) {
            Object shown = Masking.display(key, values.apply(key.name()));
            if (shown == null) {
                continue;
            }
            String[] parts = key.name().split("\\.");
            Map<String, Object> section = out;
            String leaf = parts[parts.length - 1];
            for (int i = 0; i < parts.length - 1; i++) {
                Object existing = section.get(parts[i]);
                if (existing != null && !(existing instanceof Map)) {
                    // A key beside a scalar of the same name (transactional.group next to transactional) stays flat.
                    leaf = String.join(".", Arrays.copyOfRange(parts, i, parts.length));
                    break;
                }
                section = (Map<String, Object>) section.computeIfAbsent(parts[i], k -> new LinkedHashMap<String, Object>());
            }
            section.put(leaf, shown);
        }
        return out;
    }
}
