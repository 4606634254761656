package dev.idem.runtime.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ConfigKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigDocsTest {

    @Test
    void committedReferenceMatchesTheDeclarations() throws IOException {
        Path committed = projectRoot().resolve("docs/configuration.md");
        String generated = ConfigDocs.markdown();
        if (Boolean.getBoolean("idem.docs.write")) {
            Files.createDirectories(committed.getParent());
            Files.writeString(committed, generated);
        }

        assertThat(Files.exists(committed))
                .as("docs/configuration.md is missing; generate it with: " + ConfigDocs.REGENERATE)
                .isTrue();
        assertThat(Files.readString(committed))
                .as("docs/configuration.md is out of date with the key declarations; regenerate it with: " + ConfigDocs.REGENERATE)
                .isEqualTo(generated);
    }

    @Test
    void everyRuntimeKeyIsDocumentedWithItsDefault() {
        String doc = ConfigDocs.markdown();

        for (ConfigKey<?> key : RuntimeConfigSpecs.PIPELINE.keys()) {
            assertThat(doc).contains("| `pipelines.<name>." + key.name() + "` |");
        }
        assertThat(doc)
                .contains("| `pipelines.<name>.id` | list | `[{type: header, name: message-id}]` |")
                .contains("| `pipelines.<name>.lease` | duration | `30s` | a duration such as 500ms, 30s, 5m, 2h, 7d"
                        + " or ISO-8601 PT30S that must be at least 1s |")
                .contains("| `pipelines.<name>.ordering` | enum | `key` | one of [partition, key, none] |")
                .contains("| `pipelines.<name>.source` | string | required |")
                .contains("| `pipelines.<name>.dead-letter` | string | none |")
                .contains("| `broker.type` | string | required | the id of an installed broker adapter |")
                .contains("| `runtime.shutdown-timeout` | duration | `30s` |");
    }

    @Test
    void eachPluginGetsASectionListingItsKeys() {
        String doc = ConfigDocs.markdown(FakePlugins.standard());

        assertThat(doc)
                .contains("## Broker adapter `activemq`")
                .contains("| `broker.activemq.url` | string | required | a string | The broker URL. |")
                .contains("| `broker.activemq.password` | secret | none |")
                .contains("| `broker.activemq.client` | map | `{}` | a map of settings | Native client settings. |")
                .contains("## Dedup store `caffeine`")
                .contains("| `store.caffeine.maximum-size` | long | `100000` | an integer that must be at least 1 |")
                .contains("## ID extractor `json-pointer`")
                .contains("| `pipelines.<name>.id[].pointer` | string | required | a string that must start with / |");
    }

    @Test
    void exampleInTheDocsIsAValidConfiguration() {
        PluginSpecs plugins = FakePlugins.standard();

        IdemConfig config = ConfigLoader.parse(ConfigDocs.EXAMPLE, "example", Map.of(), plugins);

        assertThat(config.pipelines().get("orders").idExtractors()).hasSize(2);
    }

    /** The directory holding the parent pom, whichever module directory the tests run in. */
    private static Path projectRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("runtime-core"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("Cannot find the project root above " + Path.of("").toAbsolutePath());
        }
        return dir;
    }
}
