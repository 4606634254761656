package dev.idem.cli;

import dev.idem.runtime.config.PluginSpecs;
import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the shipped {@code conf/idem.yaml} from the key declarations: the embedded default switched
 * on (ActiveMQ in the process, the JDBC store on an H2 file, the example handler), and every other key
 * of the runtime and of every installed plugin as a comment with its doc and default. A test keeps the
 * committed file equal to this output.
 */
final class ConfigTemplate {

    static final String BROKER = "activemq";
    static final String STORE = "jdbc";

    /** The settings the embedded default sets, by plugin id; the rest stay at their defaults. */
    static final Map<String, Map<String, String>> ACTIVE = Map.of(
            BROKER, ordered(
                    "embedded.enabled", "true",
                    "embedded.data-directory", "${IDEM_HOME}/data/activemq"),
            STORE, ordered(
                    "url", "jdbc:h2:file:${IDEM_HOME}/data/idem-store;AUTO_SERVER=TRUE"));

    static final Map<String, String> PIPELINE = ordered(
            "source", "orders",
            "handler", "dev.idem.examples.orders.OrderPaymentHandler",
            // The example's own settings (its README lists them), handed to its init().
            "handler-settings", "{ledger.file: \"${IDEM_HOME}/data/order-payments.log\", ledger.fsync: false}",
            "dead-letter", "orders.DLQ");

    private static final int WIDTH = 100;

    private ConfigTemplate() {
    }

    static String render(PluginSpecs plugins) {
        StringBuilder y = new StringBuilder();
        y.append("""
                # Idem configuration. Generated from the key declarations (dev.idem.cli.ConfigTemplate); the
                # reference of every key is docs/configuration.md and `bin/idem check` prints the effective values.
                #
                # As shipped it needs no outside service: an embedded ActiveMQ broker and the JDBC store on an
                # embedded H2 file, both keeping their state in data/, and the example order handler from
                # handlers/ bound to the queue 'orders'. Try it with `bin/idem demo`.
                #
                # The H2 file is opened with AUTO_SERVER=TRUE, so `idem store` can read it while `idem run` holds
                # it: the first process serves it to the others on a TCP port of 127.0.0.1 only (idem sets the
                # JVM property h2.bindAddress; -Dh2.bindAddress=<address> in JAVA_OPTS chooses another), with a key
                # in data/idem-store.lock.db that bin/idem keeps readable by its user alone (umask 077).
                #
                # ${VAR} is replaced by the environment variable VAR (${VAR:-default} when unset); bin/idem sets
                # IDEM_HOME to the installation folder. Put secrets in variables, never in this file.

                """);
        pluginSection(y, "broker", Kind.BROKER, BROKER, plugins);
        y.append('\n');
        pluginSection(y, "store", Kind.STORE, STORE, plugins);
        y.append('\n');
        y.append("pipelines:\n");
        comment(y, "  ", "Each pipeline consumes one source with one handler; its name is also the namespace of"
                + " its keys in the store unless it sets namespace. Several pipelines may run in one process;"
                + " pipelines on one source must share a namespace.");
        y.append("  orders:\n");
        for (ConfigKey<?> key : RuntimeConfigSpecs.PIPELINE.keys()) {
            line(y, "    ", key, PIPELINE.get(key.name()), false);
        }
        comment(y, "    ", "How the idempotency key is found: a chain of ID extractors, the first that yields one wins."
                + " Installed: " + plugins.ids(Kind.ID_EXTRACTOR) + ".");
        y.append("    id:\n      - type: ").append(RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR).append('\n');
        RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR_SETTINGS.forEach((k, v) ->
                y.append("        ").append(k).append(": ").append(v).append('\n'));
        comment(y, "    ", RuntimeConfigSpecs.ORDERING_KEY_DOC);
        y.append("    # ").append(RuntimeConfigSpecs.ORDERING_KEY).append(":\n")
                .append("    #   - type: json-pointer\n")
                .append("    #     pointer: /accountId\n");
        comment(y, "    ", RuntimeConfigSpecs.SEQUENCE_AGGREGATE_DOC + " " + RuntimeConfigSpecs.SEQUENCE_NUMBER_DOC);
        y.append("    # sequence:\n")
                .append("    #   aggregate:\n")
                .append("    #     - type: json-pointer\n")
                .append("    #       pointer: /accountId\n")
                .append("    #   number:\n")
                .append("    #     - type: header\n")
                .append("    #       name: event-seq\n");
        y.append('\n');
        y.append("runtime:\n");
        for (ConfigKey<?> key : RuntimeConfigSpecs.RUNTIME.keys()) {
            line(y, "  ", key, null, false);
        }
        return y.toString();
    }

    private static void pluginSection(StringBuilder y, String section, Kind kind, String active, PluginSpecs plugins) {
        y.append(section).append(":\n");
        comment(y, "  ", "The " + kind.label() + ": one of " + plugins.ids(kind)
                + ". Its settings go in the section named after it; the others are shown commented out.");
        y.append("  type: ").append(active).append('\n');
        if (kind == Kind.STORE) {
            for (ConfigKey<?> key : RuntimeConfigSpecs.STORE.keys()) {
                line(y, "  ", key, null, false);
            }
        }
        for (String id : plugins.ids(kind)) {
            ConfigSpec spec = plugins.spec(kind, id).orElseThrow();
            boolean on = id.equals(active);
            Map<String, String> values = ACTIVE.getOrDefault(id, Map.of());
            y.append('\n').append(on ? "  " : "  # ").append(id).append(":\n");
            for (ConfigKey<?> key : spec.keys()) {
                line(y, "    ", key, on ? values.get(key.name()) : null, !on);
            }
        }
    }

    /** One key: its doc as a comment, then the line, commented out unless it has an active value. */
    private static void line(StringBuilder y, String indent, ConfigKey<?> key, String value, boolean sectionOff) {
        String prefix = sectionOff ? "  # " + indent.substring(2) : indent;
        String doc = key.doc() == null ? "" : key.doc();
        String accepted = key.describeAccepted();
        comment(y, sectionOff ? "  # " + indent.substring(2) : indent,
                doc + (accepted == null || accepted.isBlank() || accepted.equals("a string") ? ""
                        : " Accepts " + accepted + "."));
        if (value != null && !sectionOff) {
            y.append(indent).append(key.name()).append(": ").append(value).append('\n');
            return;
        }
        Object fallback = key.defaultValue();
        String shown = fallback != null ? scalar(key.format(fallback)) : key.isRequired() ? "(required)" : "";
        y.append(sectionOff ? prefix : indent + "# ").append(key.name()).append(':')
                .append(shown.isEmpty() ? "" : " " + shown).append('\n');
    }

    /** A default as YAML reads it back when the line is uncommented: quoted where YAML would see syntax. */
    private static String scalar(String text) {
        boolean plain = !text.isEmpty() && "#{}[]&*!|>'\"%@`,?:-".indexOf(text.charAt(0)) < 0 && !text.contains(" #")
                && !text.contains(": ") && !text.endsWith(":") || text.equals("{}") || text.equals("[]") || text.matches("-?[0-9].*");
        return plain ? text : "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static void comment(StringBuilder y, String indent, String text) {
        if (text.isBlank()) {
            return;
        }
        String lead = indent.endsWith("# ") ? indent : indent + "# ";
        StringBuilder current = new StringBuilder();
        for (String word : text.trim().split("\\s+")) {
            if (current.length() > 0 && lead.length() + current.length() + 1 + word.length() > WIDTH) {
                y.append(lead).append(current).append('\n');
                current.setLength(0);
            }
            if (current.length() > 0) {
                current.append(' ');
            }
            current.append(word);
        }
        y.append(lead).append(current).append('\n');
    }

    private static Map<String, String> ordered(String... pairs) {
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put(pairs[i], pairs[i + 1]);
        }
        return map;
    }

    /** The keys the embedded default sets that a plugin does not declare: caught by the test, not at run time. */
    static List<String> undeclared(PluginSpecs plugins) {
        List<String> missing = new ArrayList<>();
        ACTIVE.forEach((id, values) -> {
            Kind kind = id.equals(BROKER) ? Kind.BROKER : Kind.STORE;
            ConfigSpec spec = plugins.spec(kind, id).orElse(ConfigSpec.empty());
            for (String name : values.keySet()) {
                if (!spec.names().contains(name)) {
                    missing.add(id + "." + name);
                }
            }
        });
        return missing;
    }
}
