package dev.idem.runtime;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The programmatic entry point: embeds the runtime in an application or a test.
 *
 * <pre>{@code
 * try (IdemRuntime idem = Idem.builder()
 *         .configFile(Path.of("conf/idem.yaml"))
 *         .handler("orders", (message, context) -> charge(message))
 *         .start()) {
 *     ...
 * }
 * }</pre>
 *
 * <p>The configuration names the broker, the store and the pipelines. Broker adapters, stores and
 * ID extractors are discovered through {@link java.util.ServiceLoader} on the given class loaders;
 * an adapter or store instance passed to the builder is used under the id it is given instead, and
 * is not closed by the runtime.
 */
public final class Idem {

    private Idem() {
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Collects what the runtime needs. Not thread-safe; use it from one thread. */
    public static final class Builder {

        String yaml;
        Path configFile;
        Map<String, String> env = System.getenv();
        final Map<String, MessageHandler> handlers = new LinkedHashMap<>();
        final Map<String, BrokerAdapter> brokers = new LinkedHashMap<>();
        final Map<String, DedupStore> stores = new LinkedHashMap<>();
        List<ClassLoader> pluginLoaders = new ArrayList<>(List.of(Idem.class.getClassLoader()));
        List<ClassLoader> handlerLoaders = List.of(Thread.currentThread().getContextClassLoader() != null
                ? Thread.currentThread().getContextClassLoader() : Idem.class.getClassLoader());
        MeterRegistry meterRegistry;
        OpenTelemetry openTelemetry;
        LongSupplier storeTicker = System::nanoTime;
        LongSupplier ticker = System::nanoTime;
        OutcomeListener outcomeListener;
        Consumer<IdemConfig> beforeConnect;

        private Builder() {
        }

        /** Reads the configuration from a YAML file. */
        public Builder configFile(Path file) {
            this.configFile = Objects.requireNonNull(file, "file");
            this.yaml = null;
            return this;
        }

        /** Takes the configuration as YAML text. */
        public Builder configYaml(String yaml) {
            this.yaml = Objects.requireNonNull(yaml, "yaml");
            this.configFile = null;
            return this;
        }

        /** The variables {@code ${VAR}} in the configuration resolve against; the process environment by default. */
        public Builder env(Map<String, String> env) {
            this.env = Map.copyOf(env);
            return this;
        }

        /** Binds a handler instance to a pipeline; takes precedence over the pipeline's {@code handler} class. */
        public Builder handler(String pipeline, MessageHandler handler) {
            handlers.put(Objects.requireNonNull(pipeline, "pipeline"), Objects.requireNonNull(handler, "handler"));
            return this;
        }

        /** Uses this adapter when {@code broker.type} is {@code id}; the caller keeps ownership and closes it. */
        public Builder broker(String id, BrokerAdapter adapter) {
            brokers.put(Objects.requireNonNull(id, "id"), Objects.requireNonNull(adapter, "adapter"));
            return this;
        }

        /** Uses this store when {@code store.type} is {@code id}; the caller keeps ownership and closes it. */
        public Builder store(String id, DedupStore store) {
            stores.put(Objects.requireNonNull(id, "id"), Objects.requireNonNull(store, "store"));
            return this;
        }

        /**
         * Where plugins are discovered; the runtime's own class loader by default. The adapter and store the
         * runtime creates run every call in their plugin's loader (see {@link dev.idem.runtime.internal.plugin.PluginContext}).
         * Keep a loader open for as long as code from it may run: after the runtime stopped, a client library's
         * threads may still be ending, and a plugin's exception may build its message when it is printed.
         */
        public Builder pluginLoaders(List<ClassLoader> loaders) {
            this.pluginLoaders = new ArrayList<>(loaders);
            return this;
        }

        /** Where handler classes named in the configuration are loaded from. */
        public Builder handlerLoader(ClassLoader loader) {
            return handlerLoaders(List.of(loader));
        }

        /**
         * Where handler classes named in the configuration are looked up, typically one isolated loader
         * per JAR in {@code handlers/}: a class must be found in exactly one of them.
         */
        public Builder handlerLoaders(List<? extends ClassLoader> loaders) {
            this.handlerLoaders = List.copyOf(loaders);
            return this;
        }

        /** Where metrics go; a private {@code SimpleMeterRegistry} by default. */
        /**
         * Traces every message a pipeline takes in on {@code openTelemetry}: one span per delivery, a child of the
         * W3C {@code traceparent} it carries. Without this call tracing is off and costs nothing.
         */
        public Builder openTelemetry(OpenTelemetry openTelemetry) {
            this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
            return this;
        }

        public Builder meterRegistry(MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            return this;
        }

        /** Told of every message outcome; none by default. */
        public Builder outcomeListener(OutcomeListener listener) {
            this.outcomeListener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Runs once the configuration is validated and the handlers are created, before the store and the broker
         * are contacted and before any pipeline starts; whatever it throws aborts {@link #start()} (the handlers
         * made are closed) and is rethrown. {@code idem run} binds its health port here, so a port in use fails
         * the start before anything consumes. Not called by {@link #validate()}.
         */
        public Builder beforeConnect(Consumer<IdemConfig> action) {
            this.beforeConnect = Objects.requireNonNull(action, "action");
            return this;
        }

        /** The time source given to in-process stores (tests inject a manual one). */
        public Builder storeTicker(LongSupplier ticker) {
            this.storeTicker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        /**
         * The time source of the pipelines (retry back-off, deferrals, lease renewal, handler timeouts) and of
         * in-process stores, read like {@link System#nanoTime()}, which is the default. Tests inject a manual one
         * to move time without sleeping.
         */
        public Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            this.storeTicker = ticker;
            return this;
        }

        /**
         * Validates everything, creates the store and the broker adapter, and starts every pipeline.
         *
         * @throws dev.idem.spi.ConfigException listing every configuration problem
         * @throws dev.idem.spi.PluginException if a plugin is missing, duplicated or broken
         * @throws dev.idem.api.IdemException if the store or broker cannot be reached
         */
        public IdemRuntime start() {
            requireConfig();
            return Startup.start(this);
        }

        /**
         * Does everything {@link #start()} does before it connects: discovers the plugins, validates the
         * configuration and creates the handlers. Neither the broker nor the store is contacted.
         *
         * @throws dev.idem.spi.ConfigException listing every configuration and handler problem
         * @throws dev.idem.spi.PluginException if a plugin is missing, duplicated or broken
         */
        public Validated validate() {
            requireConfig();
            return Startup.prepare(this).validated();
        }

        private void requireConfig() {
            if (yaml == null && configFile == null) {
                throw new IllegalStateException("No configuration: call configFile(...) or configYaml(...)");
            }
        }
    }

    /**
     * What {@link Builder#validate()} found.
     *
     * @param config the validated configuration
     * @param handlers each pipeline's handler class
     * @param plugins every plugin discovered
     */
    public record Validated(IdemConfig config, Map<String, Class<?>> handlers,
            List<dev.idem.runtime.plugin.PluginDescriptor> plugins) {
    }
}
