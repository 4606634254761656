package dev.idem.runtime.plugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginException;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Discovery through the real {@link java.util.ServiceLoader}, over plugin JARs compiled at test time
 * (see {@link FixtureJar}) and loaded the way {@code plugins/<name>/} folders are: one
 * {@link URLClassLoader} each, the runtime's loader as parent.
 */
class PluginRegistryTest {

    private static final ClassLoader RUNTIME = PluginRegistryTest.class.getClassLoader();

    @TempDir
    Path dir;

    private final List<URLClassLoader> opened = new ArrayList<>();

    @AfterEach
    void closeLoaders() throws IOException {
        for (URLClassLoader loader : opened) {
            loader.close();
        }
    }

    @Test
    void builtInExtractorsAreDiscoveredOnTheRuntimeClassPath() {
        PluginRegistry registry = PluginRegistry.discover();

        assertThat(registry.ids(Kind.ID_EXTRACTOR))
                .contains("header", "cloudevents", "broker-id", "json-pointer", "template", "sha256");
        assertThat(registry.idExtractor("json-pointer").id()).isEqualTo("json-pointer");
        assertThat(registry.plugins()).filteredOn(p -> p.id().equals("header")).singleElement()
                .satisfies(p -> {
                    assertThat(p.kind()).isEqualTo(Kind.ID_EXTRACTOR);
                    assertThat(p.className()).isEqualTo("dev.idem.runtime.extract.HeaderIdExtractorProvider");
                    assertThat(p.location()).isNotEqualTo("unknown");
                });
    }

    @Test
    void thirdPartyProviderInAJarIsFoundWithItsJarAndManifestVersion() {
        Path jar = FixtureJar.in(dir, "store-acme-2.3.1.jar")
                .storeProvider("AcmeStoreProvider", "acme", "")
                .version("2.3.1")
                .build();

        PluginRegistry registry = PluginRegistry.discover(List.of(RUNTIME, loaderOf(jar)));

        DedupStoreProvider store = registry.store("acme");
        assertThat(store.getClass().getName()).isEqualTo("fixture.AcmeStoreProvider");
        assertThat(registry.plugins()).contains(new PluginDescriptor(Kind.STORE, "acme",
                "fixture.AcmeStoreProvider", "2.3.1", jar.toString()));
        assertThat(registry.spec(Kind.STORE, "acme")).contains(store.configSpec());
        assertThat(registry.ids(Kind.STORE)).contains("acme");
    }

    @Test
    void providerWithoutPublicNoArgConstructorIsReportedWithItsClassAndJar() {
        Path jar = FixtureJar.in(dir, "store-noctor.jar")
                .storeProvider("NoCtorProvider", "noctor", "  public NoCtorProvider(String url) { }")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("Cannot load dedup store provider fixture.NoCtorProvider from " + jar)
                .hasMessageContaining("it has no public no-arg constructor")
                .hasMessageContaining("NoSuchMethodException");
    }

    @Test
    void providerWhoseStaticInitialiserThrowsIsReportedWithTheCause() {
        Path jar = FixtureJar.in(dir, "store-static.jar")
                .storeProvider("ExplodingProvider", "exploding",
                        "  static { if (true) throw new IllegalStateException(\"no licence file\"); }")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("Cannot load dedup store provider fixture.ExplodingProvider from " + jar)
                .hasMessageContaining("its static initialiser threw java.lang.IllegalStateException: no licence file");
    }

    @Test
    void providerWhoseConstructorThrowsIsReportedWithTheCause() {
        Path jar = FixtureJar.in(dir, "store-ctor.jar")
                .storeProvider("ConnectingProvider", "connecting",
                        "  public ConnectingProvider() { throw new IllegalStateException(\"connection refused\"); }")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("fixture.ConnectingProvider from " + jar)
                .hasMessageContaining("its constructor threw java.lang.IllegalStateException: connection refused");
    }

    @Test
    void twoJarsWithOneIdStopTheStartNamingBothJars() {
        Path first = FixtureJar.in(dir, "store-redis-1.0.jar").storeProvider("RedisStore", "redis", "").build();
        Path second = FixtureJar.in(dir, "store-redis-copy.jar").storeProvider("RedisStore", "redis", "").build();

        PluginException failure = discoveryFailure(loaderOf(first), loaderOf(second));

        assertThat(failure)
                .hasMessageContaining("2 dedup store providers have the id 'redis'")
                .hasMessageContaining("store-redis-1.0.jar")
                .hasMessageContaining("store-redis-copy.jar")
                .hasMessageContaining("Remove all but one");
    }

    @Test
    void twoClassesInOneJarWithOneIdAreADuplicate() {
        Path jar = FixtureJar.in(dir, "store-twins.jar")
                .storeProvider("TwinA", "twin", "")
                .storeProvider("TwinB", "twin", "")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("have the id 'twin': fixture.TwinA in " + jar + " and fixture.TwinB in " + jar);
    }

    @Test
    void servicesFileNamingAMissingClassIsReportedWithTheJarThatListsIt() {
        Path jar = FixtureJar.in(dir, "store-ghost.jar")
                .service(DedupStoreProvider.class, "fixture.GhostProvider")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("Cannot load dedup store provider fixture.GhostProvider from " + jar)
                .hasMessageContaining("is listed in META-INF/services/dev.idem.spi.DedupStoreProvider")
                .hasMessageContaining("Fix the services file or rebuild the JAR");
    }

    @Test
    void invalidIdIsRejectedWithASuggestion() {
        Path jar = FixtureJar.in(dir, "store-shouting.jar").storeProvider("ShoutingProvider", "Redis!", "").build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("fixture.ShoutingProvider from " + jar + " has the invalid id 'Redis!'")
                .hasMessageContaining("lowercase letters, digits and '-'")
                .hasMessageContaining("such as 'redis'");
    }

    @Test
    void providerWhoseSuperclassIsMissingIsNamedWithTheMissingClass() {
        Path jar = FixtureJar.in(dir, "store-orphan.jar")
                .source("fixture.BaseProvider", "package fixture;\n"
                        + "public abstract class BaseProvider implements dev.idem.spi.DedupStoreProvider { }\n")
                .source("fixture.OrphanProvider", "package fixture;\nimport dev.idem.spi.*;\n"
                        + "public class OrphanProvider extends BaseProvider {\n"
                        + "  public String id() { return \"orphan\"; }\n"
                        + "  public ConfigSpec configSpec() { return ConfigSpec.empty(); }\n"
                        + "  public DedupStore create(PluginConfig c, StoreContext x) { return null; }\n"
                        + "}\n")
                .service(DedupStoreProvider.class, "fixture.OrphanProvider")
                .omit("fixture.BaseProvider")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("Cannot load dedup store provider fixture.OrphanProvider from " + jar)
                .hasMessageContaining("a class it needs is missing: fixture.BaseProvider")
                .hasMessageContaining("Is a dependency missing from its plugin folder?");
    }

    @Test
    void pluginBundlingItsOwnCopyOfTheApiIsToldToDeclareItProvided() throws MalformedURLException {
        Path jar = FixtureJar.in(dir, "store-fat.jar").storeProvider("FatProvider", "fat", "").build();
        URL api = DedupStoreProvider.class.getProtectionDomain().getCodeSource().getLocation();
        // Not parented by the runtime: the plugin's dev.idem.spi classes are its own copy.
        URLClassLoader isolated = new URLClassLoader(new URL[] {jar.toUri().toURL(), api},
                ClassLoader.getPlatformClassLoader());
        opened.add(isolated);

        assertThat(discoveryFailure(isolated))
                .hasMessageContaining("fixture.FatProvider from " + jar)
                .hasMessageContaining("does not implement dev.idem.spi.DedupStoreProvider as the runtime loads it")
                .hasMessageContaining("scope 'provided'");
    }

    @Test
    void providerThrowingFromIdIsReported() {
        Path jar = FixtureJar.in(dir, "store-moody.jar")
                .source("fixture.MoodyProvider", "package fixture;\nimport dev.idem.spi.*;\n"
                        + "public class MoodyProvider implements DedupStoreProvider {\n"
                        + "  public String id() { throw new UnsupportedOperationException(\"not today\"); }\n"
                        + "  public ConfigSpec configSpec() { return ConfigSpec.empty(); }\n"
                        + "  public DedupStore create(PluginConfig c, StoreContext x) { return null; }\n"
                        + "}\n")
                .service(DedupStoreProvider.class, "fixture.MoodyProvider")
                .build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("fixture.MoodyProvider from " + jar
                        + ": its id() threw java.lang.UnsupportedOperationException: not today");
    }

    @Test
    void servicesFileWithASyntaxErrorIsReportedWithItsJar() {
        Path jar = FixtureJar.in(dir, "store-typo.jar").service(DedupStoreProvider.class, "fixture.Bad Name").build();

        assertThat(discoveryFailure(loaderOf(jar)))
                .hasMessageContaining("Cannot read META-INF/services/dev.idem.spi.DedupStoreProvider in " + jar)
                .hasMessageContaining("line 1: Illegal configuration-file syntax")
                .hasMessageContaining("Each line of a services file names one provider class");
    }

    @Test
    void everyProblemIsReportedInOneExceptionAndHealthyPluginsDoNotHideThem() {
        Path broken = FixtureJar.in(dir, "store-broken.jar")
                .storeProvider("NoCtorProvider", "noctor", "  public NoCtorProvider(int x) { }")
                .storeProvider("HealthyProvider", "healthy", "")
                .storeProvider("ExplodingProvider", "exploding",
                        "  static { if (true) throw new IllegalStateException(\"boom\"); }")
                .service(DedupStoreProvider.class, "fixture.GhostProvider")
                .build();
        Path badExtractor = FixtureJar.in(dir, "extractor-bad.jar")
                .source("fixture.BadExtractor", "package fixture;\nimport dev.idem.spi.*;\n"
                        + "public class BadExtractor implements IdExtractorProvider {\n"
                        + "  public String id() { return \"Bad_Id\"; }\n"
                        + "  public ConfigSpec configSpec() { return ConfigSpec.empty(); }\n"
                        + "  public IdExtractor create(PluginConfig c) { return m -> null; }\n"
                        + "}\n")
                .service(IdExtractorProvider.class, "fixture.BadExtractor")
                .build();

        PluginException failure = discoveryFailure(loaderOf(broken), loaderOf(badExtractor));

        assertThat(failure.getMessage())
                .startsWith("Plugin discovery failed (4 problems):")
                .contains("fixture.NoCtorProvider", "fixture.ExplodingProvider", "fixture.GhostProvider",
                        "fixture.BadExtractor from " + badExtractor + " has the invalid id 'Bad_Id'")
                .doesNotContain("HealthyProvider");
        assertThat(failure.getCause()).isNotNull();
        assertThat(failure.getSuppressed()).isNotEmpty();
    }

    @Test
    void providerSeenThroughParentAndChildLoadersIsNotADuplicate() {
        Path jar = FixtureJar.in(dir, "store-shared.jar").storeProvider("SharedProvider", "shared", "").build();
        URLClassLoader parent = loaderOf(jar);
        URLClassLoader child = new URLClassLoader(new URL[0], parent);
        opened.add(child);

        PluginRegistry registry = PluginRegistry.discover(List.of(RUNTIME, parent, child));

        assertThat(registry.plugins()).filteredOn(p -> p.id().equals("shared")).hasSize(1);
        assertThat(registry.plugins()).filteredOn(p -> p.id().equals("header")).hasSize(1);
    }

    @Test
    void brokenProviderSeenThroughParentAndChildLoadersIsReportedOnce() {
        Path jar = FixtureJar.in(dir, "store-ghost.jar").service(DedupStoreProvider.class, "fixture.GhostProvider")
                .build();
        URLClassLoader parent = loaderOf(jar);
        URLClassLoader child = new URLClassLoader(new URL[0], parent);
        opened.add(child);

        PluginException failure = discoveryFailure(parent, child);

        assertThat(failure).hasMessageStartingWith("Plugin discovery failed: Cannot load dedup store provider"
                + " fixture.GhostProvider");
    }

    @Test
    void providerWhoseInitialiserThrowsSeenThroughParentAndChildIsReportedOnceWithTheFirstCause() {
        Path jar = FixtureJar.in(dir, "store-static.jar")
                .storeProvider("ExplodingProvider", "exploding",
                        "  static { if (true) throw new IllegalStateException(\"no licence file\"); }")
                .build();
        URLClassLoader parent = loaderOf(jar);
        URLClassLoader child = new URLClassLoader(new URL[0], parent);
        opened.add(child);

        PluginException failure = discoveryFailure(parent, child);

        assertThat(failure).hasMessageStartingWith("Plugin discovery failed: Cannot load dedup store provider"
                + " fixture.ExplodingProvider from " + jar + ": its static initialiser threw");
    }

    @Test
    void unknownIdLookupListsAvailableIdsAndSuggestsTheClosest() {
        Path jar = FixtureJar.in(dir, "stores.jar")
                .storeProvider("JdbcStore", "jdbc", "")
                .storeProvider("RedisStore", "redis", "")
                .build();
        PluginRegistry registry = PluginRegistry.discover(List.of(RUNTIME, loaderOf(jar)));

        assertThatThrownBy(() -> registry.store("reds"))
                .isInstanceOf(PluginException.class)
                .hasMessageStartingWith("No dedup store with id 'reds'. Available: [")
                .hasMessageContaining("jdbc, redis")
                .hasMessageContaining("Did you mean 'redis'?")
                .hasMessageEndingWith("Is its plugin folder under plugins/ present?");
        assertThatThrownBy(() -> registry.broker("kafka"))
                .hasMessage("No broker adapter with id 'kafka'. Available: []."
                        + " Is its plugin folder under plugins/ present?");
        assertThatThrownBy(() -> registry.idExtractor("jsonpointer"))
                .hasMessageContaining("Did you mean 'json-pointer'?");
    }

    @Test
    void specOfAnUnknownIdIsEmpty() {
        PluginRegistry registry = PluginRegistry.discover();

        assertThat(registry.spec(Kind.BROKER, "kafka")).isEmpty();
        assertThat(registry.spec(Kind.ID_EXTRACTOR, "json-pointer")).get()
                .satisfies(spec -> assertThat(spec.names()).containsExactly("pointer"));
        assertThat(registry.ids(Kind.BROKER)).isEmpty();
    }

    @Test
    void eachDiscoveredPluginIsLoggedWithItsVersionAndLocation() {
        Path jar = FixtureJar.in(dir, "store-logged.jar").storeProvider("LoggedProvider", "logged", "")
                .version("9.9.9").build();
        Logger logger = (Logger) LoggerFactory.getLogger(PluginRegistry.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        try {
            PluginRegistry.discover(List.of(loaderOf(jar)));
        } finally {
            logger.detachAppender(appender);
        }

        assertThat(appender.list).extracting(ILoggingEvent::getFormattedMessage)
                .contains("Found dedup store 'logged' 9.9.9 in " + jar + " (fixture.LoggedProvider)");
    }

    private URLClassLoader loaderOf(Path... jars) {
        try {
            URL[] urls = new URL[jars.length];
            for (int i = 0; i < jars.length; i++) {
                urls[i] = jars[i].toUri().toURL();
            }
            URLClassLoader loader = new URLClassLoader(urls, RUNTIME);
            opened.add(loader);
            return loader;
        } catch (MalformedURLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static PluginException discoveryFailure(ClassLoader... loaders) {
        List<ClassLoader> all = new ArrayList<>(List.of(RUNTIME));
        all.addAll(List.of(loaders));
        return catchThrowableOfType(PluginException.class, () -> PluginRegistry.discover(all));
    }
}
