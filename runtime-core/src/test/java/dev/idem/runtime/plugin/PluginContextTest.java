package dev.idem.runtime.plugin;

import dev.idem.runtime.internal.plugin.PluginContext;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.PluginException;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Plugins compiled at test time and loaded through the real discovery run in their own class loader's context
 * on whatever thread calls them (the HTTP thread's readiness probe, a shutdown hook): the registry binds what it
 * creates. Each fixture method records whether the thread's context class loader was its plugin's.
 */
class PluginContextTest {

    private static final ClassLoader RUNTIME = PluginContextTest.class.getClassLoader();

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private final List<URLClassLoader> opened = new ArrayList<>();
    private URLClassLoader plugin;
    /** The context class loader of the "foreign" threads that call the plugins: neither the runtime's nor the plugin's. */
    private URLClassLoader foreign;

    @BeforeEach
    void buildPlugin() throws IOException {
        Path jar = FixtureJar.in(dir, "ctx-plugin.jar")
                .source("fixture.Seen", """
                        package fixture;
                        public final class Seen {
                          public static void record(String what, Object self) {
                            ClassLoader context = Thread.currentThread().getContextClassLoader();
                            System.setProperty("idem.test.%s." + what,
                                context == self.getClass().getClassLoader() ? "plugin" : String.valueOf(context));
                          }
                        }
                        """.formatted(run))
                .source("fixture.CtxBrokerProvider", """
                        package fixture;
                        import dev.idem.spi.*;
                        public class CtxBrokerProvider implements BrokerAdapterProvider {
                          public String id() { return "ctx-broker"; }
                          public ConfigSpec configSpec() { return ConfigSpec.empty(); }
                          public BrokerAdapter create(PluginConfig c) { Seen.record("broker.create", this); return new CtxBroker(); }
                        }
                        """)
                .source("fixture.CtxBroker", """
                        package fixture;
                        import dev.idem.spi.*;
                        public class CtxBroker implements BrokerAdapter {
                          public Subscription subscribe(SubscriptionRequest r, DeliveryListener l) {
                            Seen.record("broker.subscribe", this);
                            Thread consumer = new Thread(() -> Seen.record("broker.thread", CtxBroker.this));
                            consumer.start();
                            try { consumer.join(); } catch (InterruptedException e) { throw new IllegalStateException(e); }
                            return new Subscription() {
                              public void stop() { Seen.record("subscription.stop", this); }
                              public void close() { Seen.record("subscription.close", this); }
                            };
                          }
                          public void publish(String d, OutboundMessage m) { Seen.record("broker.publish", this); }
                          public void checkHealth() { Seen.record("broker.checkHealth", this); }
                          public void close() { Seen.record("broker.close", this); }
                        }
                        """)
                .source("fixture.CtxStoreProvider", """
                        package fixture;
                        import dev.idem.spi.*;
                        public class CtxStoreProvider implements DedupStoreProvider {
                          public String id() { return "ctx-store"; }
                          public ConfigSpec configSpec() { return ConfigSpec.empty(); }
                          public DedupStore create(PluginConfig c, StoreContext x) { Seen.record("store.create", this); return new CtxStore(); }
                        }
                        """)
                .source("fixture.CtxStore", """
                        package fixture;
                        import dev.idem.spi.*;
                        import java.time.Duration;
                        import java.util.*;
                        public class CtxStore implements InspectableDedupStore, TransactionalDedupStore {
                          public List<ClaimResult> claim(List<ClaimRequest> r) { Seen.record("store.claim", this); return List.of(); }
                          public boolean complete(StoreKey k, long t, Duration d) { Seen.record("store.complete", this); return true; }
                          public boolean release(StoreKey k, long t) { Seen.record("store.release", this); return true; }
                          public boolean renew(StoreKey k, long t, Duration d) { Seen.record("store.renew", this); return true; }
                          public int recordStart(StoreKey k, long t) { Seen.record("store.recordStart", this); return 1; }
                          public void checkHealth() { Seen.record("store.checkHealth", this); }
                          public void close() { Seen.record("store.close", this); }
                          public Optional<StoredKey> inspect(StoreKey k) { Seen.record("store.inspect", this); return Optional.empty(); }
                          public boolean delete(StoreKey k) { Seen.record("store.delete", this); return false; }
                          public StoreStats stats() { Seen.record("store.stats", this); return new StoreStats(0, 0, false); }
                          public Outcome runOnce(StoreKey k, String f, Duration d, Work work) throws Exception {
                            Seen.record("store.runOnce", this);
                            work.run(null);
                            return Outcome.COMMITTED;
                          }
                        }
                        """)
                .source("fixture.CtxIdProvider", """
                        package fixture;
                        import dev.idem.spi.*;
                        public class CtxIdProvider implements IdExtractorProvider {
                          public String id() { return "ctx-id"; }
                          public ConfigSpec configSpec() { return ConfigSpec.empty(); }
                          public IdExtractor create(PluginConfig c) {
                            return new IdExtractor() {
                              public String extract(InboundMessage m) { Seen.record("id.extract", this); return "k"; }
                            };
                          }
                        }
                        """)
                .service(BrokerAdapterProvider.class, "fixture.CtxBrokerProvider")
                .service(DedupStoreProvider.class, "fixture.CtxStoreProvider")
                .service(IdExtractorProvider.class, "fixture.CtxIdProvider")
                .build();
        plugin = open(new URLClassLoader("ctx-plugin", new URL[] {jar.toUri().toURL()}, RUNTIME));
        foreign = open(new URLClassLoader("foreign", new URL[0], RUNTIME));
    }

    private URLClassLoader open(URLClassLoader loader) {
        opened.add(loader);
        return loader;
    }

    @AfterEach
    void cleanUp() throws IOException {
        for (URLClassLoader loader : opened) {
            loader.close();
        }
        System.getProperties().keySet().removeIf(k -> k.toString().startsWith("idem.test." + run));
    }

    private String seen(String what) {
        return System.getProperty("idem.test." + run + "." + what, "not called");
    }

    /** Runs {@code action} on a new thread whose context class loader is {@link #foreign}, and checks it is restored. */
    private <T> T onForeignThread(Callable<T> action) throws Exception {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<ClassLoader> after = new AtomicReference<>();
        Thread thread = new Thread(() -> {
            try {
                result.set(action.call());
            } catch (Throwable t) {
                failure.set(t);
            }
            after.set(Thread.currentThread().getContextClassLoader());
        }, "foreign");
        thread.setContextClassLoader(foreign);
        thread.start();
        thread.join(Duration.ofSeconds(30).toMillis());
        assertThat(thread.isAlive()).as("the foreign thread ended").isFalse();
        if (failure.get() instanceof Exception e) {
            throw e;
        } else if (failure.get() instanceof Error e) {
            throw e;
        }
        assertThat(after.get()).as("the caller's context class loader is restored").isSameAs(foreign);
        return result.get();
    }

    @Test
    void everyCallOnWhatTheRegistryCreatesRunsInThePluginsContextFromAForeignThread() throws Exception {
        PluginRegistry registry = PluginRegistry.discover(List.of(RUNTIME, plugin));
        StoreKey key = new StoreKey("orders", "m-1");
        AtomicReference<ClassLoader> inWork = new AtomicReference<>();

        onForeignThread(() -> {
            BrokerAdapter broker = registry.createBroker("ctx-broker", TestPluginConfig.defaults("broker.ctx-broker",
                    registry.broker("ctx-broker").configSpec()));
            broker.publish("orders", new OutboundMessage("m-1", null, Map.of(), new byte[0]));
            broker.checkHealth();
            Subscription subscription = broker.subscribe(
                    new SubscriptionRequest("orders", "orders", 10, "orders.DLQ"), batch -> { });
            subscription.stop();
            subscription.close();
            broker.close();

            DedupStore store = registry.createStore("ctx-store", TestPluginConfig.defaults("store.ctx-store",
                    registry.store("ctx-store").configSpec()), StoreContext.system());
            store.claim(List.of());
            store.complete(key, 1, Duration.ofMinutes(1));
            store.release(key, 1);
            store.renew(key, 1, Duration.ofMinutes(1));
            store.recordStart(key, 1);
            store.checkHealth();
            InspectableDedupStore inspectable = (InspectableDedupStore) store;
            inspectable.inspect(key);
            inspectable.delete(key);
            inspectable.stats();
            ((TransactionalDedupStore) store).runOnce(key, null, Duration.ofMinutes(1),
                    transaction -> inWork.set(Thread.currentThread().getContextClassLoader()));
            store.close();

            IdExtractor extractor = registry.createIdExtractor("ctx-id", TestPluginConfig.defaults("id",
                    registry.idExtractor("ctx-id").configSpec()));
            assertThat(extractor.extract(new InboundMessage("orders", null, null, Map.of(), new byte[0], null, false, 1)))
                    .isEqualTo("k");
            return null;
        });

        Map<String, String> seen = new LinkedHashMap<>();
        for (String what : List.of("broker.create", "broker.publish", "broker.checkHealth", "broker.subscribe",
                "broker.thread", "subscription.stop", "subscription.close", "broker.close", "store.create",
                "store.claim", "store.complete", "store.release", "store.renew", "store.recordStart",
                "store.checkHealth", "store.inspect", "store.delete", "store.stats", "store.runOnce", "store.close",
                "id.extract")) {
            seen.put(what, seen(what));
        }
        assertThat(seen).as("the context class loader each plugin call saw").allSatisfy((what, context) ->
                assertThat(context).as(what).isEqualTo("plugin"));
        assertThat(inWork.get()).as("the runtime's work inside runOnce runs in the caller's context again")
                .isSameAs(foreign);
    }

    @Test
    void theReadinessProbeAndTheStopOfARunningRuntimeCallThePluginsInTheirContext() throws Exception {
        MessageHandler handler = (message, context) -> { };
        IdemRuntime runtime = Idem.builder()
                .configYaml("""
                        broker: { type: ctx-broker }
                        store: { type: ctx-store }
                        pipelines:
                          orders:
                            source: orders
                            id: [ { type: ctx-id } ]
                        """)
                .env(Map.of())
                .pluginLoaders(List.of(RUNTIME, plugin))
                .handler("orders", handler)
                .start();
        try {
            IdemRuntime.Health health = onForeignThread(runtime::health);
            assertThat(health.ready()).as(health.checks().toString()).isTrue();
            assertThat(seen("broker.checkHealth")).isEqualTo("plugin");
            assertThat(seen("store.checkHealth")).isEqualTo("plugin");
            assertThat(seen("broker.subscribe")).isEqualTo("plugin");
            assertThat(seen("broker.thread")).as("a thread the plugin starts inherits its context").isEqualTo("plugin");
        } finally {
            onForeignThread(() -> runtime.stop(Duration.ofSeconds(10)));
        }
        assertThat(seen("subscription.stop")).isEqualTo("plugin");
        assertThat(seen("subscription.close")).isEqualTo("plugin");
        assertThat(seen("broker.close")).isEqualTo("plugin");
        assertThat(seen("store.close")).isEqualTo("plugin");
    }

    @Test
    void aProviderThatCreatesNullIsNamedWithItsJar() throws IOException {
        Path jar = FixtureJar.in(dir, "store-null.jar").storeProvider("NullStoreProvider", "nothing", "").build();
        URLClassLoader loader = open(new URLClassLoader(new URL[] {jar.toUri().toURL()}, RUNTIME));
        PluginRegistry registry = PluginRegistry.discover(List.of(RUNTIME, loader));

        assertThatThrownBy(() -> registry.createStore("nothing", TestPluginConfig.defaults("store.nothing",
                registry.store("nothing").configSpec()), StoreContext.system()))
                .isInstanceOf(PluginException.class)
                .hasMessageContaining("fixture.NullStoreProvider from " + jar)
                .hasMessageContaining("returned null from create()");
    }

    // ------------------------------------------------------------------ the binding keeps the contract whole

    @Test
    void aBoundStoreHasExactlyTheOptionalCapabilitiesOfTheStore() {
        for (Set<Class<?>> capabilities : List.<Set<Class<?>>>of(Set.of(), Set.of(InspectableDedupStore.class),
                Set.of(TransactionalDedupStore.class), Set.of(InspectableDedupStore.class, TransactionalDedupStore.class),
                Set.of(SequencedDedupStore.class), Set.of(InspectableDedupStore.class, SequencedDedupStore.class),
                Set.of(InspectableDedupStore.class, SequencedDedupStore.class, OutboxStore.class),
                Set.of(StepStore.class), Set.of(InspectableDedupStore.class, SequencedDedupStore.class, StepStore.class),
                Set.of(ReplyStore.class), Set.of(TransactionalDedupStore.class, ReplyStore.class, StepStore.class))) {
            DedupStore store = PluginContext.bind((DedupStore) stub(DedupStore.class, capabilities));
            assertThat(store instanceof InspectableDedupStore).as("inspectable, for %s", capabilities)
                    .isEqualTo(capabilities.contains(InspectableDedupStore.class));
            assertThat(store instanceof TransactionalDedupStore).as("transactional, for %s", capabilities)
                    .isEqualTo(capabilities.contains(TransactionalDedupStore.class)
                            || capabilities.contains(OutboxStore.class));
            assertThat(store instanceof SequencedDedupStore).as("sequenced, for %s", capabilities)
                    .isEqualTo(capabilities.contains(SequencedDedupStore.class));
            assertThat(store instanceof OutboxStore).as("outbox, for %s", capabilities)
                    .isEqualTo(capabilities.contains(OutboxStore.class));
            assertThat(store instanceof StepStore).as("steps, for %s", capabilities)
                    .isEqualTo(capabilities.contains(StepStore.class));
            assertThat(store instanceof ReplyStore).as("replies, for %s", capabilities)
                    .isEqualTo(capabilities.contains(ReplyStore.class));
            assertThat(PluginContext.bind(store)).as("binding twice wraps once").isSameAs(store);
            assertThat(PluginContext.unwrap(store)).isNotSameAs(store).isInstanceOf(Proxy.class);
        }
    }

    /**
     * Guards the decorators against the SPI growing: every interface of {@code dev.idem.spi} that extends a
     * bound type is a capability the binding knows, and every method of the bound types, default methods
     * included, is forwarded rather than inherited (an inherited default would skip the plugin's own).
     */
    @Test
    void theBindingForwardsEveryMethodOfTheSpiAndKnowsEveryCapability() throws Exception {
        List<Class<?>> boundTypes = List.of(DedupStore.class, BrokerAdapter.class, Subscription.class, IdExtractor.class);
        Set<String> capabilities = new TreeSet<>();
        for (Class<?> type : spiTypes()) {
            if (type.isInterface() && !boundTypes.contains(type)
                    && boundTypes.stream().anyMatch(bound -> bound.isAssignableFrom(type))) {
                capabilities.add(type.getSimpleName());
            }
        }
        assertThat(capabilities).as("interfaces extending a bound type; teach PluginContext.bind a new one")
                .containsExactly("InspectableDedupStore", "OutboxStore", "ReplyStore", "SequencedDedupStore",
                        "StepStore", "TransactionalDedupStore");

        Object store = PluginContext.bind((DedupStore) stub(DedupStore.class,
                Set.of(InspectableDedupStore.class, TransactionalDedupStore.class)));
        Object sequenced = PluginContext.bind((DedupStore) stub(DedupStore.class,
                Set.of(InspectableDedupStore.class, SequencedDedupStore.class, OutboxStore.class, StepStore.class)));
        BrokerAdapter broker = PluginContext.bind((BrokerAdapter) stub(BrokerAdapter.class, Set.of()));
        Object subscription = broker.subscribe(new SubscriptionRequest("p", "s", 1, null), batch -> { });
        Object extractor = PluginContext.bind((IdExtractor) stub(IdExtractor.class, Set.of()));
        Map<Class<?>, Object> bound = Map.of(DedupStore.class, store, InspectableDedupStore.class, store,
                TransactionalDedupStore.class, store, BrokerAdapter.class, broker, Subscription.class, subscription,
                IdExtractor.class, extractor, SequencedDedupStore.class, sequenced, OutboxStore.class, sequenced,
                StepStore.class, sequenced);
        for (Map.Entry<Class<?>, Object> type : bound.entrySet()) {
            for (Method method : type.getKey().getMethods()) {
                if (Modifier.isStatic(method.getModifiers())) {
                    continue;
                }
                Method implementation = type.getValue().getClass().getMethod(method.getName(), method.getParameterTypes());
                assertThat(implementation.getDeclaringClass().isInterface())
                        .as("%s.%s is forwarded by %s", type.getKey().getSimpleName(), method.getName(),
                                type.getValue().getClass().getName())
                        .isFalse();
            }
        }
    }

    /** A stub implementing {@code main} and {@code capabilities} whose methods answer defaults. */
    private static Object stub(Class<?> main, Set<Class<?>> capabilities) {
        List<Class<?>> interfaces = new ArrayList<>(List.of(main));
        interfaces.addAll(capabilities);
        return Proxy.newProxyInstance(RUNTIME, interfaces.toArray(Class<?>[]::new), (proxy, method, args) -> {
            if (method.getName().equals("subscribe")) {
                return stub(Subscription.class, Set.of());
            }
            Class<?> returns = method.getReturnType();
            if (returns == boolean.class) {
                return false;
            }
            if (returns == int.class) {
                return 0;
            }
            if (method.getName().equals("toString")) {
                return "stub";
            }
            return null;
        });
    }

    /** Every class of {@code dev.idem.spi}, read from where idem-api is (a folder or a JAR). */
    private static List<Class<?>> spiTypes() throws IOException, URISyntaxException, ClassNotFoundException {
        Path location = Path.of(DedupStore.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(location)) {
            try (Stream<Path> files = Files.walk(location.resolve("dev/idem/spi"), 1)) {
                files.map(f -> "dev/idem/spi/" + f.getFileName()).forEach(names::add);
            }
        } else {
            try (JarFile jar = new JarFile(location.toFile())) {
                jar.stream().map(e -> e.getName()).filter(n -> n.startsWith("dev/idem/spi/") && n.indexOf('/', 13) < 0)
                        .forEach(names::add);
            }
        }
        List<Class<?>> types = new ArrayList<>();
        for (String name : names) {
            if (name.endsWith(".class") && !name.contains("$")) {
                types.add(Class.forName(name.substring(0, name.length() - ".class".length()).replace('/', '.')));
            }
        }
        assertThat(types).as("the SPI's classes, from " + location).hasSizeGreaterThan(10);
        return types;
    }
}
