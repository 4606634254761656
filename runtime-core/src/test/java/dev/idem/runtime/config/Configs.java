package dev.idem.runtime.config;

import dev.idem.spi.ConfigException;
import java.util.List;
import java.util.Map;

/** Shortcuts for the config tests: a minimal valid file, and loading with the fake plugins. */
final class Configs {

    /** The smallest valid file: everything else takes its default. */
    static final String MINIMAL = """
            broker:
              type: activemq
              activemq:
                url: vm://embedded
            store:
              type: caffeine
            pipelines:
              orders:
                source: orders
            """;

    private Configs() {
    }

    static IdemConfig load(String yaml) {
        return load(yaml, Map.of());
    }

    static IdemConfig load(String yaml, Map<String, String> env) {
        return ConfigLoader.parse(yaml, "test.yaml", env, FakePlugins.standard());
    }

    /** The minimal file with {@code lines} added under {@code pipelines.orders}, indented for it. */
    static String withPipelineKeys(String lines) {
        return MINIMAL + lines.stripIndent().lines().map(l -> "    " + l).reduce("", (a, b) -> a + b + "\n");
    }

    static ConfigException failure(String yaml) {
        return failure(yaml, Map.of(), FakePlugins.standard());
    }

    static ConfigException failure(String yaml, Map<String, String> env, PluginSpecs plugins) {
        try {
            ConfigLoader.parse(yaml, "test.yaml", env, plugins);
        } catch (ConfigException e) {
            return e;
        }
        throw new AssertionError("expected a ConfigException for:\n" + yaml);
    }

    static List<String> problems(String yaml) {
        return failure(yaml).problems();
    }
}
