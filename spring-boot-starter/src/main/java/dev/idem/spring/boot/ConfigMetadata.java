package dev.idem.spring.boot;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.runtime.config.PluginSpecs;
import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Spring's {@code META-INF/spring-configuration-metadata.json} for the {@code idem.} keys, generated from the same
 * declarations that validate them ({@link RuntimeConfigSpecs}, each plugin's {@link ConfigSpec}), so that IDEs
 * complete {@code idem.runtime.*}, {@code idem.broker.<type>.*} and {@code idem.store.<type>.*} with their docs and
 * offer the plugin ids and enum values as hints.
 *
 * <p>A pipeline's keys sit under a name the application chooses ({@code idem.pipelines.orders.concurrency}), which
 * Spring's metadata format cannot describe: {@code idem.pipelines} is declared as a map and its description points
 * to the reference. The plugins covered are those on the class path of the generation (the test class path of this
 * module: the stores and the Kafka, RabbitMQ and ActiveMQ adapters of this repository). {@code ConfigMetadataTest} keeps the committed file in
 * sync and rewrites it with {@value #REGENERATE}.
 */
final class ConfigMetadata {

    static final String REGENERATE = "mvn -pl spring-boot-starter test -Dtest=ConfigMetadataTest -Didem.docs.write=true";
    static final String PATH = "src/main/resources/META-INF/spring-configuration-metadata.json";

    private static final String SOURCE = IdemAutoConfiguration.class.getName();

    private final List<Map<String, Object>> groups = new ArrayList<>();
    private final List<Map<String, Object>> properties = new ArrayList<>();
    private final List<Map<String, Object>> hints = new ArrayList<>();

    private ConfigMetadata() {
    }

    /** The metadata as JSON, two-space indented, one trailing newline. */
    static String json(PluginSpecs plugins) {
        ConfigMetadata m = new ConfigMetadata();
        m.group("idem", "Idem: the keys of conf/idem.yaml under idem. (see Idem's docs/configuration.md).");
        m.property("idem.enabled", "java.lang.Boolean", true, "Whether the Idem starter runs Idem in this application.");
        m.pluginSection(plugins, Kind.BROKER, "broker");
        m.pluginSection(plugins, Kind.STORE, "store");
        m.group("idem.pipelines", "The pipelines, by name.");
        m.property("idem.pipelines", "java.util.Map<java.lang.String,java.util.Map<java.lang.String,java.lang.Object>>",
                null, "The pipelines, by name: idem.pipelines.<name>.source, .transactional, .concurrency, .retry.*, "
                        + ".id[0].type and the other keys of pipelines.<name> in Idem's docs/configuration.md. A"
                        + " pipeline's handler is the bean annotated @IdemHandler(\"<name>\").");
        m.group("idem.runtime", "The runtime's own settings.");
        for (ConfigKey<?> key : RuntimeConfigSpecs.RUNTIME.keys()) {
            m.key("idem.runtime." + key.name(), key);
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("groups", m.groups);
        root.put("properties", m.properties);
        root.put("hints", m.hints);
        DefaultPrettyPrinter printer = new DefaultPrettyPrinter()
                .withObjectIndenter(new DefaultIndenter("  ", "\n"))
                .withArrayIndenter(new DefaultIndenter("  ", "\n"));
        try {
            return new ObjectMapper().writer(printer).writeValueAsString(root) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private void pluginSection(PluginSpecs plugins, Kind kind, String section) {
        String prefix = "idem." + section;
        group(prefix, "The " + kind.label() + ": " + section + ".type selects one, " + section
                + ".<type>.* are its settings.");
        key(prefix + ".type", RuntimeConfigSpecs.TYPE);
        if (kind == Kind.STORE) {
            for (ConfigKey<?> key : RuntimeConfigSpecs.STORE.keys()) {
                key(prefix + "." + key.name(), key);
            }
        }
        List<Map<String, Object>> ids = new ArrayList<>();
        for (String id : plugins.ids(kind)) {
            ids.add(Map.of("value", id));
            ConfigSpec spec = plugins.spec(kind, id).orElse(ConfigSpec.empty());
            group(prefix + "." + id, "The settings of the " + kind.label() + " '" + id + "'.");
            for (ConfigKey<?> key : spec.keys()) {
                key(prefix + "." + id + "." + key.name(), key);
            }
        }
        hints.add(hint(prefix + ".type", ids));
    }

    private void key(String name, ConfigKey<?> key) {
        String doc = key.doc() == null ? "" : key.doc();
        property(name, javaType(key.type()), defaultOf(key),
                (doc.isEmpty() ? "" : doc + " ") + "Accepted: " + key.describeAccepted() + "."
                        + (key.isRequired() ? " Required." : ""));
        if (key.type() == ConfigKey.Type.ENUM) {
            hints.add(hint(name, key.allowedValues().stream().map(v -> Map.<String, Object>of("value", v)).toList()));
        }
    }

    private void group(String name, String description) {
        Map<String, Object> g = new LinkedHashMap<>();
        g.put("name", name);
        g.put("sourceType", SOURCE);
        g.put("description", description);
        groups.add(g);
    }

    private void property(String name, String type, Object defaultValue, String description) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("name", name);
        p.put("type", type);
        p.put("sourceType", SOURCE);
        p.put("description", description);
        if (defaultValue != null) {
            p.put("defaultValue", defaultValue);
        }
        properties.add(p);
    }

    private static Map<String, Object> hint(String name, List<Map<String, Object>> values) {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("name", name);
        h.put("values", values);
        return h;
    }

    private static String javaType(ConfigKey.Type type) {
        return switch (type) {
            case STRING, SECRET, ENUM -> "java.lang.String";
            case INT -> "java.lang.Integer";
            case LONG -> "java.lang.Long";
            case DOUBLE -> "java.lang.Double";
            case BOOLEAN -> "java.lang.Boolean";
            case DURATION -> "java.time.Duration";
            case LIST -> "java.util.List<java.lang.String>";
            case MAP -> "java.util.Map<java.lang.String,java.lang.String>";
        };
    }

    private static Object defaultOf(ConfigKey<?> key) {
        Object value = key.defaultValue();
        if (value == null || key.type() == ConfigKey.Type.SECRET) {
            return null;
        }
        if (value instanceof Duration d) {
            return ConfigKey.formatDuration(d);
        }
        if (value instanceof Map<?, ?> m && m.isEmpty() || value instanceof List<?> l && l.isEmpty()) {
            return null;
        }
        return value;
    }
}
