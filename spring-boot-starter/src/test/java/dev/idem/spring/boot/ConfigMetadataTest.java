package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.runtime.plugin.PluginRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConfigMetadataTest {

    private final String generated = ConfigMetadata.json(PluginRegistry.discover(List.of(getClass().getClassLoader())));

    @Test
    void committedMetadataMatchesTheDeclarations() throws IOException {
        Path committed = Path.of(ConfigMetadata.PATH);
        if (Boolean.getBoolean("idem.docs.write")) {
            Files.writeString(committed, generated);
        }

        assertThat(committed).as("%s is missing; generate it with: %s", ConfigMetadata.PATH, ConfigMetadata.REGENERATE)
                .exists();
        assertThat(Files.readString(committed))
                .as("%s is out of date with the key declarations; regenerate it with: %s", ConfigMetadata.PATH,
                        ConfigMetadata.REGENERATE)
                .isEqualTo(generated);
    }

    @Test
    void runtimeAndPluginKeysAreDescribedWithTypesDefaultsAndHints() throws IOException {
        JsonNode metadata = new ObjectMapper().readTree(generated);

        JsonNode shutdown = property(metadata, "idem.runtime.shutdown-timeout");
        assertThat(shutdown.get("type").asText()).isEqualTo("java.time.Duration");
        assertThat(shutdown.get("defaultValue").asText()).isEqualTo("30s");
        assertThat(shutdown.get("description").asText()).startsWith("How long a graceful stop waits");
        assertThat(property(metadata, "idem.store.jdbc.url").get("description").asText()).contains("Required.");
        assertThat(property(metadata, "idem.store.jdbc.pool.maximum-size").get("defaultValue").asInt()).isEqualTo(10);
        assertThat(property(metadata, "idem.store.redis.password").has("defaultValue")).isFalse();
        assertThat(property(metadata, "idem.pipelines").get("type").asText()).startsWith("java.util.Map");
        assertThat(hintValues(metadata, "idem.store.type")).containsExactly("caffeine", "jdbc", "redis");
        assertThat(hintValues(metadata, "idem.broker.type")).contains("rabbitmq");
    }

    private static JsonNode property(JsonNode metadata, String name) {
        for (JsonNode p : metadata.get("properties")) {
            if (p.get("name").asText().equals(name)) {
                return p;
            }
        }
        throw new AssertionError("No property " + name);
    }

    private static List<String> hintValues(JsonNode metadata, String name) {
        List<String> values = new ArrayList<>();
        for (JsonNode h : metadata.get("hints")) {
            if (h.get("name").asText().equals(name)) {
                h.get("values").forEach(v -> values.add(v.get("value").asText()));
            }
        }
        return values;
    }
}
