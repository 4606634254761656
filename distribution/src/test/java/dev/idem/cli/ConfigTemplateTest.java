package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PluginSpecs;
import dev.idem.runtime.plugin.PluginRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Keeps the shipped {@code conf/idem.yaml} equal to what the key declarations generate, and proves it
 * loads. Regenerate: {@code mvn -pl distribution -am install -DskipITs -Dtest=ConfigTemplateTest
 * -Dsurefire.failIfNoSpecifiedTests=false -Didem.template.write=true}.
 */
class ConfigTemplateTest {

    private static final Path SHIPPED = Path.of("src/main/dist/conf/idem.yaml");

    private final PluginRegistry plugins = PluginRegistry.discover();

    @Test
    void shippedConfigurationIsTheGeneratedOne() throws IOException {
        String generated = ConfigTemplate.render(plugins);
        if (Boolean.getBoolean("idem.template.write")) {
            Files.writeString(SHIPPED, generated, StandardCharsets.UTF_8);
        }
        assertThat(Files.readString(SHIPPED, StandardCharsets.UTF_8))
                .as("%s is stale; regenerate it (see this test's Javadoc)", SHIPPED)
                .isEqualTo(generated);
    }

    @Test
    void everySettingTheDefaultMakesIsDeclaredByItsPlugin() {
        assertThat(ConfigTemplate.undeclared(plugins)).isEmpty();
    }

    @Test
    void shippedConfigurationLoadsWithEveryPluginInstalled() {
        IdemConfig config = ConfigLoader.parse(ConfigTemplate.render(plugins), "conf/idem.yaml",
                Map.of("IDEM_HOME", "/opt/idem"), plugins);
        assertThat(config.broker().type()).isEqualTo("activemq");
        assertThat(config.store().type()).isEqualTo("jdbc");
        assertThat(config.pipelines()).containsOnlyKeys("orders");
        assertThat(config.pipelines().get("orders").handler()).isEqualTo("dev.idem.examples.orders.OrderPaymentHandler");
    }

    @Test
    void everyInstalledPluginsKeysAppearInTheTemplate() {
        String template = ConfigTemplate.render(plugins);
        for (var kind : PluginSpecs.Kind.values()) {
            if (kind == PluginSpecs.Kind.ID_EXTRACTOR) {
                continue;
            }
            for (String id : plugins.ids(kind)) {
                for (String key : plugins.spec(kind, id).orElseThrow().names()) {
                    assertThat(template).as("%s %s key %s", kind, id, key).contains(key + ":");
                }
            }
        }
    }
}
