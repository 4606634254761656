package dev.idem.runtime.plugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.runtime.Idem;
import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A discovered provider's {@code validate} runs in its own class loader, and a broken one cannot hide other problems. */
class PluginValidationTest {

    @TempDir
    Path dir;

    private URLClassLoader loader;

    @AfterEach
    void close() throws IOException {
        if (loader != null) {
            loader.close();
        }
    }

    private PluginRegistry registryWith(String body) throws MalformedURLException {
        Path jar = FixtureJar.in(dir, "store-acme.jar").storeProvider("AcmeStoreProvider", "acme", body).build();
        loader = new URLClassLoader(new URL[] {jar.toUri().toURL()}, PluginValidationTest.class.getClassLoader());
        return PluginRegistry.discover(List.of(PluginValidationTest.class.getClassLoader(), loader));
    }

    private static final String YAML = """
            broker: {type: memory}
            store: {type: acme}
            pipelines:
              orders: {source: orders, lease: -5s}
            """;

    @Test
    void theProvidersProblemsAreReportedWithTheOthersAndItRunsInItsClassLoader() throws MalformedURLException {
        PluginRegistry registry = registryWith("""
                  public java.util.List<ConfigProblem> validate(PluginConfig c) {
                    String where = Thread.currentThread().getContextClassLoader() == getClass().getClassLoader()
                        ? "in its loader" : "in a foreign loader";
                    return java.util.List.of(new ConfigProblem(c.path(), c.path() + " is inconsistent (" + where + ")"));
                  }
                """);

        ConfigException failure = failure();

        assertThat(failure.problems()).contains("store.acme is inconsistent (in its loader)",
                "Invalid value '-5s' for pipelines.orders.lease: must be at least 1s");
    }

    @Test
    void aProviderWhoseValidateThrowsIsReportedAsOneProblemNamingIt() throws MalformedURLException {
        PluginRegistry registry = registryWith("""
                  public java.util.List<ConfigProblem> validate(PluginConfig c) {
                    throw new IllegalStateException("licence file missing");
                  }
                """);

        List<ConfigProblem> problems = registry.validate(Kind.STORE, "acme",
                TestPluginConfig.defaults("store.acme", registry.store("acme").configSpec()));

        assertThat(problems).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("store.acme");
            assertThat(p.message()).isEqualTo("The dedup store 'acme' (fixture.AcmeStoreProvider from "
                    + dir.resolve("store-acme.jar") + ") failed to check store.acme:"
                    + " java.lang.IllegalStateException: licence file missing");
        });
        assertThat(failure().problems()).hasSize(2);
    }

    /** What {@code check} reports, with the fixture JAR as a plugin folder and an in-memory broker. */
    private ConfigException failure() {
        Idem.Builder check = Idem.builder().configYaml(YAML).env(Map.of())
                .pluginLoaders(List.of(PluginValidationTest.class.getClassLoader(), loader))
                .broker("memory", new InMemoryBroker(new ManualTicker(), 10).connect());
        return catchThrowableOfType(check::validate, ConfigException.class);
    }
}
