package dev.idem.runtime;

import dev.idem.api.HandlerLifecycle;
import dev.idem.api.IdemException;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.PluginSection;
import dev.idem.runtime.config.PluginSpecs;
import dev.idem.runtime.internal.pipeline.Pipeline;
import dev.idem.runtime.plugin.IsolatedClassLoader;
import dev.idem.runtime.internal.plugin.PluginContext;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import dev.idem.spi.StoreContext;
import dev.idem.runtime.internal.outbox.OutboxRelay;
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

    IdemRuntime(IdemConfig config, MeterRegistry meterRegistry, BrokerAdapter broker, boolean ownsBroker,
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
        Map<String, String> checks = new LinkedHashMap<>();
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

    /**
     * The dedup store, when it offers an operator's view of its keys (the console's key lookup and release); empty
     * for a store that does not. Calls on it go to the store the pipelines use, while they use it.
     */
    public Optional<InspectableDedupStore> inspectableStore() {
        return store instanceof InspectableDedupStore inspectable ? Optional.of(inspectable) : Optional.empty();
    }

    /** Each pipeline by name, in configuration order: whether it consumes now. Calls neither broker nor store. */
    public Map<String, Boolean> pipelinesRunning() {
        Map<String, Boolean> running = new LinkedHashMap<>();
        for (Pipeline p : pipelines) {
            running.put(p.name(), p.running());
        }
        return running;
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

    /** Closes the {@link AutoCloseable} handlers in their own class loader; a failure is logged, not thrown. */
    static void closeHandlers(List<MessageHandler> handlers) {
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

    static void closeQuietly(BrokerAdapter broker, DedupStore store) {
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
