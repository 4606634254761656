package dev.idem.runtime;

import dev.idem.api.HandlerLifecycle;
import dev.idem.api.IdemException;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.PluginSection;
import dev.idem.runtime.config.PluginSpecs;
import dev.idem.runtime.pipeline.Pipeline;
import dev.idem.runtime.plugin.IsolatedClassLoader;
import dev.idem.runtime.plugin.PluginContext;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import dev.idem.spi.StoreContext;
import dev.idem.runtime.outbox.OutboxRelay;
import dev.idem.spi.OutboxStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running Idem: one broker adapter, one dedup store, its pipelines. Created by
 * {@link Idem.Builder#start()}; thread-safe.
 *
 * <p>{@link #close()} stops gracefully within the configured {@code runtime.shutdown-timeout}:
 * in-flight messages finish or are released and handed back unacked, then the adapter and the store
 * the runtime created are closed.
 */
public final class IdemRuntime implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(IdemRuntime.class);

    private final IdemConfig config;
    private final MeterRegistry meterRegistry;
    private final BrokerAdapter broker;
    private final boolean ownsBroker;
    private final DedupStore store;
    private final boolean ownsStore;
    private final List<Pipeline> pipelines;
    private final ScheduledExecutorService scheduler;
    /** The handlers this runtime made from class names (not those bound in code): closed on stop. */
    private final List<MessageHandler> ownedHandlers;
    /** Publishes the outbox of transactional pipelines; {@code null} when none emits through one. */
    private final OutboxRelay relay;
    private boolean stopped;

    private IdemRuntime(IdemConfig config, MeterRegistry meterRegistry, BrokerAdapter broker, boolean ownsBroker,
            DedupStore store, boolean ownsStore, List<Pipeline> pipelines, ScheduledExecutorService scheduler,
            List<MessageHandler> ownedHandlers, OutboxRelay relay) {
        this.relay = relay;
        this.config = config;
        this.meterRegistry = meterRegistry;
        this.broker = broker;
        this.ownsBroker = ownsBroker;
        this.store = store;
        this.ownsStore = ownsStore;
        this.pipelines = pipelines;
        this.scheduler = scheduler;
        this.ownedHandlers = ownedHandlers;
    }

    /** The work of a start that happens before anything is contacted. */
    record Prepared(PluginRegistry registry, IdemConfig config, Map<String, MessageHandler> handlers) {

        Idem.Validated validated() {
            Map<String, Class<?>> classes = new java.util.LinkedHashMap<>();
            handlers.forEach((pipeline, handler) -> classes.put(pipeline, handler.getClass()));
            return new Idem.Validated(config, classes, registry.plugins());
        }
    }

    static Prepared prepare(Idem.Builder b) {
        PluginRegistry registry = PluginRegistry.discover(b.pluginLoaders);
        PluginSpecs specs = withInstances(registry, b);
        IdemConfig config = b.yaml != null
                ? ConfigLoader.parse(b.yaml, "configuration", b.env, specs)
                : ConfigLoader.load(b.configFile, b.env, specs);

        List<String> problems = new ArrayList<>();
        Map<String, MessageHandler> handlers = new java.util.LinkedHashMap<>();
        for (PipelineConfig p : config.pipelines().values()) {
            MessageHandler h = b.handlers.get(p.name());
            if (h == null) {
                h = instantiateHandler(p, b.handlerLoaders, config.runtime().handlerCreateTimeout(), problems);
                if (h != null && !(h instanceof HandlerLifecycle) && !p.handlerSettings().asMap().isEmpty()) {
                    // Settings no code reads are a mistake (the wrong class, or init forgotten), not something to skip.
                    problems.add("pipelines." + p.name() + "." + RuntimeConfigSpecs.HANDLER_SETTINGS.name() + " is set,"
                            + " but handler class '" + p.handler() + "' does not implement "
                            + HandlerLifecycle.class.getName() + ", so nothing would receive the settings. Implement"
                            + " its init(HandlerSettings), or remove " + RuntimeConfigSpecs.HANDLER_SETTINGS.name());
                }
            }
            if (h != null) {
                handlers.put(p.name(), h);
            }
        }
        for (String bound : b.handlers.keySet()) {
            if (!config.pipelines().containsKey(bound)) {
                problems.add("A handler is bound to pipeline '" + bound + "', which the configuration does not"
                        + " declare. Declared: " + config.pipelines().keySet());
            }
        }
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return new Prepared(registry, config, handlers);
    }

    static IdemRuntime start(Idem.Builder b) {
        Prepared prepared = prepare(b);
        PluginRegistry registry = prepared.registry();
        IdemConfig config = prepared.config();
        Map<String, MessageHandler> handlers = prepared.handlers();

        MeterRegistry meters = b.meterRegistry != null ? b.meterRegistry : new SimpleMeterRegistry();
        DedupStore store = b.stores.get(config.store().type());
        boolean ownsStore = store == null;
        BrokerAdapter broker = null;
        boolean ownsBroker = false;
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idem-lease-keeper");
            t.setDaemon(true);
            return t;
        });
        List<Pipeline> started = new ArrayList<>();
        // Handlers whose init still runs after its timeout: closing one under its init would race it.
        Set<MessageHandler> stuck = Collections.newSetFromMap(new IdentityHashMap<>());
        try {
            if (b.beforeConnect != null) {
                b.beforeConnect.accept(config);
            }
            warnOfUnusedSettings(b, config);
            HandlerInit.initAll(config.pipelines(), ownedByPipeline(b, handlers),
                    config.runtime().handlerCreateTimeout(), stuck);
            if (ownsStore) {
                store = registry.createStore(config.store().type(), config.store().config(),
                        new StoreContext(b.storeTicker));
            }
            broker = b.brokers.get(config.broker().type());
            ownsBroker = broker == null;
            if (ownsBroker) {
                broker = registry.createBroker(config.broker().type(), config.broker().config());
            }
            for (PipelineConfig p : config.pipelines().values()) {
                Pipeline.Extractors chains = new Pipeline.Extractors(extractors(registry, p.idExtractors()),
                        extractors(registry, p.orderingKey()),
                        p.sequence() == null ? List.of() : extractors(registry, p.sequence().aggregate()),
                        p.sequence() == null ? List.of() : extractors(registry, p.sequence().number()));
                Pipeline pipeline = new Pipeline(p, handlers.get(p.name()), store, chains, meters,
                        b.outcomeListener, b.ticker);
                pipeline.traceWith(b.openTelemetry, config.broker().type());
                BrokerAdapter adapter = broker;
                PluginContext.call(adapter, () -> {
                    pipeline.start(adapter, scheduler);
                    return pipeline;
                });
                started.add(pipeline);
            }
        } catch (RuntimeException e) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            for (Pipeline p : started) {
                p.stop(deadline);
            }
            scheduler.shutdownNow();
            closeHandlers(ownedHandlers(b, handlers).stream().filter(h -> !stuck.contains(h)).toList());
            closeQuietly(ownsBroker ? broker : null, ownsStore ? store : null);
            throw e;
        }
        Duration summaryEvery = config.runtime().summaryInterval();
        if (!summaryEvery.isZero()) {
            scheduler.scheduleAtFixedRate(() -> started.forEach(Pipeline::logSummary), summaryEvery.toNanos(),
                    summaryEvery.toNanos(), TimeUnit.NANOSECONDS);
        }
        log.info("Idem started: broker '{}', store '{}', {} pipeline(s) {}", config.broker().type(),
                config.store().type(), started.size(), config.pipelines().keySet());
        OutboxRelay relay = null;
        if (store instanceof OutboxStore outbox && started.stream().anyMatch(p -> p.config().transactional())) {
            relay = new OutboxRelay(outbox, broker, meters);
            for (Pipeline p : started) {
                p.onOutboxWrite(relay::wake);
            }
            relay.start();
        }
        return new IdemRuntime(config, meters, broker, ownsBroker, store, ownsStore, List.copyOf(started), scheduler,
                ownedHandlers(b, handlers), relay);
    }

    private static List<IdExtractor> extractors(PluginRegistry registry, List<PluginSection> sections) {
        List<IdExtractor> chain = new ArrayList<>();
        for (PluginSection section : sections) {
            chain.add(registry.createIdExtractor(section.type(), section.config()));
        }
        return chain;
    }

    /** The discovered plugins plus the instances given to the builder, under their ids. */
    private static PluginSpecs withInstances(PluginRegistry registry, Idem.Builder b) {
        return new PluginSpecs() {
            @Override
            public Optional<ConfigSpec> spec(Kind kind, String id) {
                Optional<ConfigSpec> discovered = registry.spec(kind, id);
                boolean given = (kind == Kind.BROKER && b.brokers.containsKey(id))
                        || (kind == Kind.STORE && b.stores.containsKey(id));
                // An instance given under a discovered plugin's id keeps that plugin's keys valid.
                return given && discovered.isEmpty() ? Optional.of(ConfigSpec.empty()) : discovered;
            }

            @Override
            public List<ConfigProblem> validate(Kind kind, String id, PluginConfig config) {
                boolean given = (kind == Kind.BROKER && b.brokers.containsKey(id))
                        || (kind == Kind.STORE && b.stores.containsKey(id));
                // A given instance is used as it is: its provider's create, which validate guards, never runs.
                return given ? List.of() : registry.validate(kind, id, config);
            }

            @Override
            public SortedSet<String> ids(Kind kind) {
                SortedSet<String> ids = new TreeSet<>(registry.ids(kind));
                if (kind == Kind.BROKER) {
                    ids.addAll(b.brokers.keySet());
                } else if (kind == Kind.STORE) {
                    ids.addAll(b.stores.keySet());
                }
                return ids;
            }
        };
    }

    private static MessageHandler instantiateHandler(PipelineConfig p, List<ClassLoader> loaders, Duration timeout,
            List<String> problems) {
        String path = "pipelines." + p.name() + ".handler";
        if (p.handler() == null) {
            problems.add("Missing required key " + path + ": name the handler class (a public class implementing "
                    + MessageHandler.class.getName() + " with a public no-arg constructor), or bind a handler"
                    + " with Idem.builder().handler(\"" + p.name() + "\", ...)");
            return null;
        }
        Map<Class<?>, String> found = new java.util.LinkedHashMap<>();
        List<String> searched = new ArrayList<>();
        for (ClassLoader loader : loaders) {
            searched.add(locationOf(loader));
            try {
                Class<?> type = Class.forName(p.handler(), false, loader);
                found.putIfAbsent(type, locationOf(type.getClassLoader()));
            } catch (ClassNotFoundException e) {
                // Not in this JAR; the others are searched too.
            } catch (LinkageError e) {
                problems.add("Handler class '" + p.handler() + "' (" + path + ") in " + locationOf(loader)
                        + " could not be loaded: " + e + ". Does the JAR bundle the classes it needs?");
                return null;
            }
        }
        if (found.isEmpty()) {
            problems.add("Handler class '" + p.handler() + "' (" + path + ") was not found in " + searched
                    + ". Is its JAR in handlers/, and is the class name spelled as in the JAR?");
            return null;
        }
        if (found.size() > 1) {
            problems.add("Handler class '" + p.handler() + "' (" + path + ") is in several handler JARs: "
                    + found.values() + ". Keep one of them in handlers/");
            return null;
        }
        Class<?> type = found.keySet().iterator().next();
        String where = p.handler() + "' (" + path + ", from " + found.get(type) + ")";
        if (!MessageHandler.class.isAssignableFrom(type)) {
            problems.add("Handler class '" + where + " does not implement " + MessageHandler.class.getName());
            return null;
        }
        if (Modifier.isAbstract(type.getModifiers()) || !Modifier.isPublic(type.getModifiers())) {
            problems.add("Handler class '" + where + " must be public and not abstract");
            return null;
        }
        Constructor<?> constructor;
        try {
            constructor = type.getConstructor();
        } catch (NoSuchMethodException e) {
            problems.add("Handler class '" + where + " has no public no-arg constructor");
            return null;
        } catch (LinkageError e) {
            problems.add("Handler class '" + where + " could not be created: " + e);
            return null;
        }
        return construct(p, constructor, where, timeout, problems);
    }

    /**
     * Runs the handler's constructor on a thread of its own, in the handler's class loader, and waits at most
     * {@code timeout}: a constructor that blocks (on a service that does not answer) must not hang
     * {@code idem check} or a start. A constructor still running then is interrupted and left behind on its
     * daemon thread; the Java platform offers no way to stop it.
     */
    private static MessageHandler construct(PipelineConfig p, Constructor<?> constructor, String where,
            Duration timeout, List<String> problems) {
        FutureTask<Object> creation = new FutureTask<>(constructor::newInstance);
        Thread thread = new Thread(creation, "idem-handler-create-" + p.name());
        thread.setDaemon(true);
        thread.setContextClassLoader(constructor.getDeclaringClass().getClassLoader());
        thread.start();
        try {
            return (MessageHandler) creation.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            String stuckAt = stuckAt(thread);
            creation.cancel(true);
            problems.add("Handler class '" + where + " was not created within " + ConfigKey.formatDuration(timeout)
                    + " (runtime." + RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name() + "): its constructor "
                    + (stuckAt == null ? "did not return" : "was still running at " + stuckAt) + ". A constructor"
                    + " should not wait for a service; connect lazily or in the background, or raise runtime."
                    + RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name());
        } catch (ExecutionException e) {
            Throwable failure = e.getCause();
            if (failure instanceof InvocationTargetException thrown) {
                problems.add("Handler class '" + where + " threw from its constructor: " + thrown.getCause());
            } else {
                problems.add("Handler class '" + where + " could not be created: " + failure);
            }
        } catch (InterruptedException e) {
            creation.cancel(true);
            Thread.currentThread().interrupt();
            problems.add("Handler class '" + where + " was not created: interrupted while its constructor ran");
        }
        return null;
    }

    /** The first frame of the handler's own code (not the JDK's) where {@code thread} runs, or null. */
    static String stuckAt(Thread thread) {
        StackTraceElement[] frames = thread.getStackTrace();
        for (StackTraceElement frame : frames) {
            String c = frame.getClassName();
            if (!(c.startsWith("java.") || c.startsWith("javax.") || c.startsWith("jdk.") || c.startsWith("sun."))) {
                return show(frame);
            }
        }
        return frames.length == 0 ? null : show(frames[0]);
    }

    /** {@code com.example.Handler.<init>(Handler.java:12)}, without the class loader and module prefixes. */
    private static String show(StackTraceElement frame) {
        String source = frame.getFileName() == null ? "unknown source"
                : frame.getFileName() + (frame.getLineNumber() > 0 ? ":" + frame.getLineNumber() : "");
        return frame.getClassName() + "." + frame.getMethodName() + "(" + source + ")";
    }

    private static String locationOf(ClassLoader loader) {
        if (loader instanceof IsolatedClassLoader isolated) {
            return isolated.location();
        }
        return loader == null ? "the JDK" : "the class path";
    }


    public IdemConfig config() {
        return config;
    }

    public MeterRegistry meterRegistry() {
        return meterRegistry;
    }

    /**
     * Checks readiness now: the broker and the store answer their health checks and every pipeline
     * consumes. Thread-safe; the checks call the broker and the store, so call it at probe rates.
     */
    public Health health() {
        Map<String, String> checks = new java.util.LinkedHashMap<>();
        boolean ready = check(checks, "broker", broker::checkHealth);
        ready &= check(checks, "store", store::checkHealth);
        for (Pipeline p : pipelines) {
            boolean running = p.running();
            checks.put("pipeline." + p.name(), running ? "running" : "stopped");
            ready &= running;
        }
        return new Health(ready, checks);
    }

    private static boolean check(Map<String, String> checks, String name, Runnable probe) {
        try {
            probe.run();
            checks.put(name, "up");
            return true;
        } catch (RuntimeException e) {
            checks.put(name, "down: " + Secret.maskCredentials(String.valueOf(e.getMessage())));
            return false;
        } catch (LinkageError e) {
            // A plugin whose classes cannot be linked is down, and says why, rather than failing the probe.
            checks.put(name, "down: " + Secret.maskCredentials(e.toString()));
            return false;
        }
    }

    /**
     * What {@link #health()} found.
     *
     * @param ready whether the runtime can process messages now
     * @param checks each check by name ({@code broker}, {@code store}, {@code pipeline.<name>}) with
     *        {@code up}, {@code running}, or what is wrong (credentials in URLs masked)
     */
    public record Health(boolean ready, Map<String, String> checks) {
    }

    /** Messages handed over to the pipelines and not yet settled, over all pipelines. */
    public int inFlight() {
        int sum = 0;
        for (Pipeline p : pipelines) {
            sum += p.inFlight();
        }
        return sum;
    }

    /**
     * Stops gracefully: every pipeline stops taking messages, in-flight work finishes until
     * {@code timeout}, then what is left is interrupted, released and handed back unacked.
     * Idempotent.
     *
     * @return true if all in-flight work finished in time
     */
    public synchronized boolean stop(Duration timeout) {
        if (stopped) {
            return true;
        }
        stopped = true;
        long deadline = System.nanoTime() + timeout.toNanos();
        boolean drained = true;
        for (Pipeline p : pipelines) {
            drained &= p.stop(deadline);
        }
        if (relay != null) {
            relay.close(Duration.ofNanos(Math.max(TimeUnit.SECONDS.toNanos(1), deadline - System.nanoTime())));
        }
        scheduler.shutdownNow();
        closeHandlers(ownedHandlers);
        closeQuietly(ownsBroker ? broker : null, ownsStore ? store : null);
        log.info("Idem stopped");
        return drained;
    }

    private static List<MessageHandler> ownedHandlers(Idem.Builder b, Map<String, MessageHandler> handlers) {
        return List.copyOf(ownedByPipeline(b, handlers).values());
    }

    /** The handlers this runtime made from class names, by pipeline: those it initialises and closes. */
    private static Map<String, MessageHandler> ownedByPipeline(Idem.Builder b, Map<String, MessageHandler> handlers) {
        Map<String, MessageHandler> owned = new LinkedHashMap<>();
        handlers.forEach((pipeline, handler) -> {
            if (!b.handlers.containsKey(pipeline)) {
                owned.put(pipeline, handler);
            }
        });
        return owned;
    }

    /**
     * A handler bound in code is the caller's to initialise, so settings meant for it reach it only if the caller
     * passes them on; said once, rather than refused, since one file may serve both {@code idem run} and a test.
     */
    private static void warnOfUnusedSettings(Idem.Builder b, IdemConfig config) {
        for (PipelineConfig p : config.pipelines().values()) {
            if (b.handlers.containsKey(p.name()) && !p.handlerSettings().asMap().isEmpty()) {
                log.warn("pipelines.{}.{} is set, but the pipeline's handler is bound in code, and the runtime"
                        + " initialises only the handlers it creates: pass the settings to it yourself"
                        + " (IdemRuntime.config().pipelines().get(\"{}\").handlerSettings()), or remove them",
                        p.name(), RuntimeConfigSpecs.HANDLER_SETTINGS.name(), p.name());
            }
        }
    }

    /** Closes the {@link AutoCloseable} handlers in their own class loader; a failure is logged, not thrown. */
    private static void closeHandlers(List<MessageHandler> handlers) {
        for (MessageHandler handler : handlers) {
            if (handler instanceof AutoCloseable closeable) {
                try {
                    PluginContext.call(handler, () -> {
                        try {
                            closeable.close();
                            return null;
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });
                } catch (RuntimeException e) {
                    log.warn("Closing handler {} failed", handler.getClass().getName(),
                            e instanceof IllegalStateException && e.getCause() != null ? e.getCause() : e);
                }
            }
        }
    }

    /** {@link #stop(Duration)} with the configured {@code runtime.shutdown-timeout}. */
    @Override
    public void close() {
        stop(config.runtime().shutdownTimeout());
    }

    private static void closeQuietly(BrokerAdapter broker, DedupStore store) {
        if (broker != null) {
            try {
                broker.close();
            } catch (IdemException | IllegalStateException e) {
                log.warn("Closing the broker adapter failed", e);
            }
        }
        if (store != null) {
            try {
                store.close();
            } catch (IdemException | IllegalStateException e) {
                log.warn("Closing the dedup store failed", e);
            }
        }
    }
}
