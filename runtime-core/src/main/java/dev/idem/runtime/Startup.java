package dev.idem.runtime;

import dev.idem.api.HandlerLifecycle;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.PluginSection;
import dev.idem.runtime.config.PluginSpecs;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.runtime.internal.outbox.OutboxRelay;
import dev.idem.runtime.internal.payload.Payloads;
import dev.idem.runtime.internal.pipeline.Pipeline;
import dev.idem.runtime.internal.plugin.PluginContext;
import dev.idem.runtime.plugin.PluginDescriptor;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.StoreContext;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What builds a running Idem from an {@link Idem.Builder}: {@link #prepare} does everything that needs no outside
 * service (plugins discovered, configuration validated, handlers created), {@link #start} then initialises the
 * handlers, creates the store and the broker adapter, builds and starts every pipeline and the outbox relay, and
 * on any failure stops and closes what it had started before rethrowing.
 */
final class Startup {

    private static final Logger log = LoggerFactory.getLogger(Startup.class);

    private Startup() {
    }

    /** The work of a start that happens before anything is contacted. */
    record Prepared(PluginRegistry registry, IdemConfig config, Map<String, MessageHandler> handlers) {

        Idem.Validated validated() {
            Map<String, Class<?>> classes = new LinkedHashMap<>();
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
        Map<String, MessageHandler> handlers = new LinkedHashMap<>();
        for (PipelineConfig p : config.pipelines().values()) {
            MessageHandler h = b.handlers.get(p.name());
            if (h == null) {
                h = HandlerFactory.instantiateHandler(p, b.handlerLoaders, config.runtime().handlerCreateTimeout(), problems);
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
                // The schema file, and a typed handler's payload type against payload.format, before anything starts.
                problems.addAll(Payloads.problems(p, h));
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
        OutboxRelay relay = null;
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
            OutboxStore outbox = store instanceof OutboxStore o
                    && config.pipelines().values().stream().anyMatch(PipelineConfig::transactional) ? o : null;
            relay = outbox == null ? null : new OutboxRelay(outbox, broker, meters);
            Runnable outboxWritten = relay == null ? null : relay::wake;
            for (PipelineConfig p : config.pipelines().values()) {
                Pipeline.Extractors chains = new Pipeline.Extractors(extractors(registry, p.idExtractors()),
                        extractors(registry, p.orderingKey()),
                        p.sequence() == null ? List.of() : extractors(registry, p.sequence().aggregate()),
                        p.sequence() == null ? List.of() : extractors(registry, p.sequence().number()));
                Pipeline pipeline = new Pipeline(p, handlers.get(p.name()), store, chains, new Pipeline.Environment(
                        meters, b.outcomeListener, b.ticker, b.openTelemetry, config.broker().type(), outboxWritten,
                        config.keyDigest()));
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
            IdemRuntime.closeHandlers(ownedHandlers(b, handlers).stream().filter(h -> !stuck.contains(h)).toList());
            IdemRuntime.closeQuietly(ownsBroker ? broker : null, ownsStore ? store : null);
            throw e;
        }
        Duration summaryEvery = config.runtime().summaryInterval();
        if (!summaryEvery.isZero()) {
            scheduler.scheduleAtFixedRate(() -> started.forEach(Pipeline::logSummary), summaryEvery.toNanos(),
                    summaryEvery.toNanos(), TimeUnit.NANOSECONDS);
        }
        log.info("Idem started: broker '{}', store '{}', {} pipeline(s) {}", config.broker().type(),
                config.store().type(), started.size(), config.pipelines().keySet());
        if (config.keyDigest() != KeyDigest.NONE) {
            log.info("The store keeps a {} digest of each key (store.key-digest); logs and dead letters show the keys",
                    config.keyDigest().configValue());
        }
        if (relay != null) {
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
}
