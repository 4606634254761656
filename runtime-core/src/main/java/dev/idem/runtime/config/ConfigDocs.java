package dev.idem.runtime.config;

import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Generates the Markdown configuration reference from the key declarations, so the docs cannot
 * drift from what the loader accepts: the runtime's keys ({@link RuntimeConfigSpecs}) and, when
 * given, a section per plugin. The committed {@code docs/configuration.md} is
 * {@link #markdown()}; a test keeps it in sync.
 *
 * <p>Stateless and thread-safe; output is deterministic (plugins sorted by id).
 */
public final class ConfigDocs {

    /** Regenerates the runtime reference: {@code ConfigDocs [output-file]} (stdout without one). */
    public static void main(String[] args) throws IOException {
        String doc = markdown();
        if (args.length == 0) {
            System.out.print(doc);
        } else {
            Files.writeString(Path.of(args[0]), doc);
        }
    }

    /** The command that rewrites {@code docs/configuration.md}, for the out-of-date message. */
    static final String REGENERATE = "mvn -pl runtime-core -am install -Dtest=ConfigDocsTest"
            + " -Dsurefire.failIfNoSpecifiedTests=false -Didem.docs.write=true";

    static final String EXAMPLE = """
            broker:
              type: activemq
              activemq:
                url: vm://embedded
            store:
              type: caffeine
              caffeine:
                maximum-size: 100000
            pipelines:
              orders:
                source: orders
                handler: com.example.OrderHandler
                id:
                  - type: header
                    name: message-id
                  - type: json-pointer
                    pointer: /orderId
                missing-id: dead-letter
                concurrency: 4
                lease: 30s
                retry:
                  max-attempts: 3
                  initial-backoff: 100ms
                dead-letter: orders.DLQ
            runtime:
              shutdown-timeout: 30s
            """;

    private static final PluginSpecs NO_PLUGINS = new PluginSpecs() {
        @Override
        public Optional<ConfigSpec> spec(Kind kind, String id) {
            return Optional.empty();
        }

        @Override
        public SortedSet<String> ids(Kind kind) {
            return new TreeSet<>();
        }
    };

    private ConfigDocs() {
    }

    /** The reference of the runtime's own keys: the content of {@code docs/configuration.md}. */
    public static String markdown() {
        return markdown(NO_PLUGINS);
    }

    /** The runtime's keys, then a section per plugin in {@code plugins}. */
    public static String markdown(PluginSpecs plugins) {
        StringBuilder md = new StringBuilder();
        md.append("# Configuration reference\n\n")
                .append("<!-- Generated from the key declarations by dev.idem.runtime.config.ConfigDocs; do not edit.\n")
                .append("     Regenerate: ").append(REGENERATE).append(" -->\n\n")
                .append("Idem reads one YAML file, `conf/idem.yaml`. It selects one broker adapter and one dedup store\n")
                .append("among the installed plugins, and declares the pipelines.\n\n");
        rules(md);
        md.append("## Example\n\n```yaml\n").append(EXAMPLE).append("```\n\n");

        for (Kind kind : List.of(Kind.BROKER, Kind.STORE)) {
            String section = kind == Kind.BROKER ? ConfigLoader.BROKER : ConfigLoader.STORE;
            md.append("## `").append(section).append("`\n\n");
            List<String[]> rows = new ArrayList<>();
            rows.add(row(section + "." + RuntimeConfigSpecs.TYPE.name(), RuntimeConfigSpecs.TYPE,
                    "the id of an installed " + kind.label()));
            if (kind == Kind.STORE) {
                for (ConfigKey<?> key : RuntimeConfigSpecs.STORE.keys()) {
                    rows.add(row(section + "." + key.name(), key, null));
                }
            }
            rows.add(new String[] {code(section + ".<type>"), "section", "", "the keys of the selected " + kind.label(),
                    "The settings of the selected " + kind.label() + ", named after its id. A section named after"
                            + " another " + kind.label() + " is an error."});
            table(md, rows);
        }

        md.append("## `pipelines.<name>`\n\n")
                .append("At least one pipeline. A name starts with a lowercase letter or digit and holds only lowercase\n")
                .append("letters, digits, `.`, `_` and `-`, at most ").append(RuntimeConfigSpecs.MAX_NAME_LENGTH)
                .append(" characters (the longest namespace every\n")
                .append("dedup store holds); it names the consumer and the pipeline's keys in the store.\n\n");
        List<String[]> rows = new ArrayList<>();
        for (ConfigKey<?> key : RuntimeConfigSpecs.PIPELINE.keys()) {
            rows.add(row("pipelines.<name>." + key.name(), key, null));
            if (key == RuntimeConfigSpecs.HANDLER) {
                rows.add(new String[] {code("pipelines.<name>." + RuntimeConfigSpecs.ID), "list",
                        code("[{type: " + RuntimeConfigSpecs.DEFAULT_ID_EXTRACTOR + ", name: message-id}]"),
                        "a non-empty list of ID extractor entries", RuntimeConfigSpecs.ID_DOC});
            }
            if (key == RuntimeConfigSpecs.TRANSACTIONAL) {
                rows.add(new String[] {code("pipelines.<name>." + RuntimeConfigSpecs.SEQUENCE_AGGREGATE), "list", "",
                        "a non-empty list of ID extractor entries", RuntimeConfigSpecs.SEQUENCE_AGGREGATE_DOC});
                rows.add(new String[] {code("pipelines.<name>." + RuntimeConfigSpecs.SEQUENCE_NUMBER), "list", "",
                        "a non-empty list of ID extractor entries", RuntimeConfigSpecs.SEQUENCE_NUMBER_DOC});
            }
            if (key == RuntimeConfigSpecs.ORDERING) {
                rows.add(new String[] {code("pipelines.<name>." + RuntimeConfigSpecs.ORDERING_KEY), "list", "",
                        "a non-empty list of ID extractor entries", RuntimeConfigSpecs.ORDERING_KEY_DOC});
            }
        }
        table(md, rows);
        md.append("Each `id` entry is `type:` (the id of an installed ID extractor) with that extractor's keys beside it:\n\n")
                .append("```yaml\nid:\n  - type: header\n    name: message-id\n  - type: json-pointer\n    pointer: /orderId\n```\n\n");

        md.append("## `runtime`\n\n");
        rows = new ArrayList<>();
        for (ConfigKey<?> key : RuntimeConfigSpecs.RUNTIME.keys()) {
            rows.add(row(ConfigLoader.RUNTIME + "." + key.name(), key, null));
        }
        table(md, rows);

        plugins(md, plugins);
        return md.toString();
    }

    private static void rules(StringBuilder md) {
        md.append("## Rules\n\n")
                .append("- Everything is validated before anything starts, and every problem is reported at once, each\n")
                .append("  naming the key's path, the value and what is accepted.\n")
                .append("- Unknown keys are errors; a likely typo gets a suggestion.\n")
                .append("- A key with nothing after it (`lease:`) counts as absent: its default applies.\n")
                .append("- Sections and dots are interchangeable: `retry: {max-attempts: 5}` is `retry.max-attempts: 5`.\n")
                .append("  A key of type `map` (native client settings, `handler-settings`) takes its whole subtree, flattened\n")
                .append("  to dotted names with string values.\n")
                .append("- `${VAR}` in a string value is replaced by the environment variable `VAR`; `${VAR:-default}` uses\n")
                .append("  `default` when `VAR` is unset or empty; `$${` writes a literal `${`. An unset variable without\n")
                .append("  default is an error. A value made only of placeholders that comes out empty counts as absent.\n")
                .append("  Substituted text is parsed by the key's type like any other value.\n")
                .append("- Durations: `500ms`, `30s`, `5m`, `2h`, `7d`, `0`, or ISO-8601 such as `PT30S`.\n")
                .append("- Values of type `secret` are masked as `").append(Masking.MASK)
                .append("` wherever configuration is printed, and so are `map`\n")
                .append("  settings whose names suggest a secret (`password`, `secret`, `token`, `credential`, `jaas`, ...).\n\n");
    }

    private static void plugins(StringBuilder md, PluginSpecs plugins) {
        for (Kind kind : Kind.values()) {
            for (String id : plugins.ids(kind)) {
                Optional<ConfigSpec> spec = plugins.spec(kind, id);
                if (spec.isEmpty()) {
                    continue;
                }
                String prefix = switch (kind) {
                    case BROKER -> ConfigLoader.BROKER + "." + id;
                    case STORE -> ConfigLoader.STORE + "." + id;
                    case ID_EXTRACTOR -> "pipelines.<name>.id[]";
                };
                md.append("## ").append(capitalized(kind.label())).append(" `").append(id).append("`\n\n");
                if (kind == Kind.ID_EXTRACTOR) {
                    md.append("In an `id` entry with `type: ").append(id).append("`.\n\n");
                }
                if (spec.get().keys().isEmpty()) {
                    md.append("No settings.\n\n");
                    continue;
                }
                List<String[]> rows = new ArrayList<>();
                for (ConfigKey<?> key : spec.get().keys()) {
                    rows.add(row(prefix + "." + key.name(), key, null));
                }
                table(md, rows);
            }
        }
    }

    private static String[] row(String path, ConfigKey<?> key, String accepted) {
        String defaultValue;
        if (key.isRequired()) {
            defaultValue = "required";
        } else if (key.defaultValue() == null) {
            defaultValue = "none";
        } else {
            defaultValue = code(String.valueOf(Masking.display(key, key.defaultValue())));
        }
        return new String[] {code(path), key.type().name().toLowerCase(Locale.ROOT), defaultValue,
                accepted != null ? accepted : key.describeAccepted(), key.doc()};
    }

    private static void table(StringBuilder md, List<String[]> rows) {
        md.append("| Key | Type | Default | Accepted | Description |\n| --- | --- | --- | --- | --- |\n");
        for (String[] row : rows) {
            md.append('|');
            for (String cell : row) {
                md.append(' ').append(cell.replace("|", "\\|").replace('\n', ' ')).append(" |");
            }
            md.append('\n');
        }
        md.append('\n');
    }

    private static String code(String text) {
        return "`" + text + "`";
    }

    private static String capitalized(String label) {
        return Character.toUpperCase(label.charAt(0)) + label.substring(1);
    }
}
