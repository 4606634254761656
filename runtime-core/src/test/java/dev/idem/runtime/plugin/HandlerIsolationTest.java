package dev.idem.runtime.plugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ConfigException;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.PluginException;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Handler JARs loaded as {@code handlers/} is: one isolated class loader per JAR, built by
 * {@link PluginDirectories}, and handlers run through the real runtime.
 */
class HandlerIsolationTest {

    @TempDir
    Path handlers;

    private final List<IsolatedClassLoader> loaders = new ArrayList<>();
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @AfterEach
    void closeLoaders() throws IOException {
        for (IsolatedClassLoader loader : loaders) {
            loader.close();
        }
        System.getProperties().keySet().removeIf(k -> k.toString().startsWith("idem.test." + run));
    }

    /**
     * A handler that reports, through a system property, which copy of {@code Caffeine} it sees and
     * whether its own loader is the thread's context loader while it runs.
     */
    private Path handlerJar(String name, String origin) {
        return FixtureJar.in(handlers, name + ".jar")
                // The runtime's class path has the real Caffeine; this JAR bundles a class of the same name.
                .source("com.github.benmanes.caffeine.cache.Caffeine", """
                        package com.github.benmanes.caffeine.cache;
                        public final class Caffeine { public static String origin() { return "%s"; } }
                        """.formatted(origin))
                .source(name + ".OrderHandler", """
                        package %s;
                        import dev.idem.api.*;
                        public class OrderHandler implements MessageHandler {
                          public void handle(Message message, HandlerContext context) {
                            boolean ownContext = Thread.currentThread().getContextClassLoader() == getClass().getClassLoader();
                            System.setProperty("idem.test.%s." + context.pipeline(),
                                com.github.benmanes.caffeine.cache.Caffeine.origin() + "|" + ownContext);
                          }
                        }
                        """.formatted(name, run))
                .build();
    }

    private List<IsolatedClassLoader> load() {
        List<IsolatedClassLoader> found = PluginDirectories.handlers(handlers, getClass().getClassLoader());
        loaders.addAll(found);
        return found;
    }

    private static String config(String... pipelines) {
        StringBuilder yaml = new StringBuilder("broker: { type: memory }\nstore: { type: caffeine }\npipelines:\n");
        for (int i = 0; i < pipelines.length; i += 2) {
            yaml.append("  ").append(pipelines[i]).append(":\n    source: ").append(pipelines[i])
                    .append("\n    handler: ").append(pipelines[i + 1]).append('\n');
        }
        return yaml.toString();
    }

    private static IdemRuntime start(String yaml, InMemoryBroker broker, List<IsolatedClassLoader> loaders) {
        return Idem.builder().configYaml(yaml).env(Map.of()).broker("memory", broker).handlerLoaders(loaders).start();
    }

    @Test
    void eachHandlerJarUsesItsOwnCopyOfALibraryTheRuntimeAlsoHas() {
        handlerJar("billing", "billing-jar");
        handlerJar("shipping", "shipping-jar");
        InMemoryBroker broker = new InMemoryBroker();
        try (IdemRuntime runtime = start(config("billing", "billing.OrderHandler", "shipping", "shipping.OrderHandler"),
                broker, load())) {
            for (String queue : List.of("billing", "shipping")) {
                broker.publish(queue, new OutboundMessage(null, null, Map.of("message-id", "m-1"),
                        "{}".getBytes(StandardCharsets.UTF_8)));
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> System.getProperty("idem.test." + run + ".shipping") != null
                    && System.getProperty("idem.test." + run + ".billing") != null);
        }
        assertThat(System.getProperty("idem.test." + run + ".billing")).isEqualTo("billing-jar|true");
        assertThat(System.getProperty("idem.test." + run + ".shipping")).isEqualTo("shipping-jar|true");
    }

    @Test
    void aFileThatIsNotAJarIsReportedByName() throws IOException {
        Files.writeString(handlers.resolve("broken.jar"), "not a zip");
        assertThatThrownBy(this::load).isInstanceOf(PluginException.class)
                .hasMessageContaining("broken.jar").hasMessageContaining("not a readable JAR");
    }

    @Test
    void aHandlerClassInNoJarListsTheJarsSearched() {
        handlerJar("billing", "billing-jar");
        List<IsolatedClassLoader> found = load();
        assertThatThrownBy(() -> start(config("orders", "billing.Missing"), new InMemoryBroker(), found))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("Handler class 'billing.Missing' (pipelines.orders.handler) was not found in")
                .hasMessageContaining("billing.jar");
    }

    @Test
    void aHandlerWithoutNoArgConstructorIsReportedWithItsJar() {
        FixtureJar.in(handlers, "needy.jar").source("needy.Handler", """
                package needy;
                import dev.idem.api.*;
                public class Handler implements MessageHandler {
                  public Handler(String config) { }
                  public void handle(Message message, HandlerContext context) { }
                }
                """).build();
        List<IsolatedClassLoader> found = load();
        assertThatThrownBy(() -> start(config("orders", "needy.Handler"), new InMemoryBroker(), found))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("needy.Handler").hasMessageContaining("needy.jar")
                .hasMessageContaining("has no public no-arg constructor");
    }

    @Test
    void theSameHandlerClassInTwoJarsIsAmbiguous() {
        handlerJar("billing", "first");
        FixtureJar.in(handlers, "billing-copy.jar").source("billing.OrderHandler", """
                package billing;
                import dev.idem.api.*;
                public class OrderHandler implements MessageHandler {
                  public void handle(Message message, HandlerContext context) { }
                }
                """).build();
        List<IsolatedClassLoader> found = load();
        assertThatThrownBy(() -> start(config("orders", "billing.OrderHandler"), new InMemoryBroker(), found))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("is in several handler JARs")
                .hasMessageContaining("billing.jar").hasMessageContaining("billing-copy.jar");
    }
}
