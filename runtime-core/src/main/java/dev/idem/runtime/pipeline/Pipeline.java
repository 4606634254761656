package dev.idem.runtime.pipeline;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.OutcomeListener;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.pipeline.PipelineState.Phase;
import dev.idem.runtime.plugin.PluginContext;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStore;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.spi.TransactionalDedupStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pipeline: takes batches from a broker subscription and runs each delivery through key
 * extraction, one batched claim, the handler (with timeout, retries and lease renewal), the store's
 * completion and then the broker ack. See DESIGN.md, "The pipeline" and "Ordering and concurrency".
 *
 * <p>The stages, over one {@link PipelineState}: {@link Intake} (keys and the batched claim),
 * {@link KeyScheduler} (per-key queues and the workers), {@link Runs} with a {@link RunStrategy}
 * ({@link ClaimedRun} or {@link TransactionalRun}), {@link Settlement} (every broker settle) and
 * {@link LeaseKeeper}. Timers run on the injected ticker.
 *
 * <p>Every delivery handed over is settled exactly once (ack, retry later or dead-letter) unless
 * the process dies or the stop deadline passes, in which case the broker redelivers it. Nothing is
 * acked before the store has recorded the key as completed, except duplicates the store already
 * knows and messages processed unprotected by the user's choice.
 */
public final class Pipeline implements DeliveryListener {

    private static final Logger log = LoggerFactory.getLogger(Pipeline.class);

    /** MDC keys set while a handler runs: the pipeline (on every worker thread) and the message's key. */
    public static final String MDC_PIPELINE = "idem.pipeline";
    public static final String MDC_KEY = "idem.key";

    private final PipelineState state;
    private final Intake intake;
    private final Runs runs;
    private final LeaseKeeper leaseKeeper;
    private final ClassLoader handlerLoader;
    private final Settlement settle;
    private final ClaimedRun claimedRun;
    private KeyScheduler scheduler;
    /** Batched completions in plain mode; {@code null} in transactional mode or with {@code commit.batch-size: 1}. */
    private GroupCommit groupCommit;
    private DelayedTasks timers;
    private volatile Subscription subscription;
    private ScheduledFuture<?> keeper;
    /** Reads the subscription's backlog into {@code idem.backlog} every {@link #BACKLOG_EVERY}. */
    private ScheduledFuture<?> backlogWatch;
    private static final java.time.Duration BACKLOG_EVERY = java.time.Duration.ofSeconds(5);
    /** What the last summary line counted; touched only by the thread calling {@link #logSummary()}. */
    private final long[] summarized = new long[4];
    private long summarizedAt = System.nanoTime();

    /**
     * The extractor chains of one pipeline.
     *
     * @param id the chain that finds the idempotency key
     * @param ordering the chain that finds the ordering key ({@code ordering-key}); empty for the defaults
     * @param aggregate the sequence guard's aggregate chain ({@code sequence.aggregate}); empty without the guard
     * @param number the sequence guard's number chain ({@code sequence.number}); empty without the guard
     */
    public record Extractors(List<IdExtractor> id, List<IdExtractor> ordering, List<IdExtractor> aggregate,
            List<IdExtractor> number) {
        public Extractors(List<IdExtractor> id, List<IdExtractor> ordering) {
            this(id, ordering, List.of(), List.of());
        }
    }

    /**
     * @param idExtractors the chain that finds the idempotency key
     * @param orderingExtractors the chain that finds the ordering key ({@code ordering-key}); empty for the defaults
     * @param ticker the time source of retries, deferrals, leases and handler timeouts ({@link System#nanoTime} in production)
     * @throws ConfigException if the pipeline is transactional and the store cannot be
     */
    public Pipeline(PipelineConfig config, MessageHandler handler, DedupStore store, List<IdExtractor> idExtractors,
            List<IdExtractor> orderingExtractors, MeterRegistry registry, OutcomeListener outcomes,
            LongSupplier ticker) {
        this(config, handler, store, new Extractors(idExtractors, orderingExtractors), registry, outcomes, ticker);
    }

    /**
     * @param ticker the time source of retries, deferrals, leases and handler timeouts ({@link System#nanoTime} in production)
     * @throws ConfigException if the pipeline is transactional and the store cannot be, or has a sequence guard
     *         and the store keeps no watermarks
     */
    public Pipeline(PipelineConfig config, MessageHandler handler, DedupStore store, Extractors extractors,
            MeterRegistry registry, OutcomeListener outcomes, LongSupplier ticker) {
        TransactionalDedupStore transactionalStore = null;
        if (config.transactional()) {
            if (!(store instanceof TransactionalDedupStore transactional)) {
                throw new ConfigException("pipelines." + config.name() + ".transactional is true, but the dedup store "
                        + PluginContext.unwrap(store).getClass().getName()
                        + " cannot record keys in the handler's transaction."
                        + " Use a store that can (store.type: jdbc), or set transactional: false");
            }
            transactionalStore = transactional;
        }
        if (config.sequence() != null && !(store instanceof SequencedDedupStore)) {
            throw new ConfigException("pipelines." + config.name() + ".sequence is set, but the dedup store "
                    + PluginContext.unwrap(store).getClass().getName() + " keeps no sequence watermarks."
                    + " Use a store that does (store.type: caffeine, redis or jdbc), or remove the sequence section");
        }
        this.state = new PipelineState(config, handler, store, transactionalStore,
                new PipelineMetrics(registry, config.name(), outcomes), ticker);
        Settlement settle = new Settlement(state);
        Claims claims = new Claims(state, settle);
        ClaimedRun claimed = new ClaimedRun(state, settle);
        this.settle = settle;
        this.claimedRun = claimed;
        Sequences sequences = config.sequence() == null ? null
                : new Sequences(state, settle, extractors.aggregate(), extractors.number());
        RunStrategy strategy = transactionalStore != null
                ? new TransactionalRun(state, settle, claims, claimed, sequences) : claimed;
        this.runs = new Runs(state, settle, claims, strategy, sequences, transactionalStore == null);
        this.intake = new Intake(state, new KeyResolver(extractors.id(), config.missingId()),
                new OrderKeys(config.ordering(), extractors.ordering()), claims, settle, sequences);
        this.leaseKeeper = new LeaseKeeper(state);
        this.handlerLoader = handler.getClass().getClassLoader();
    }

    /** Traces each delivery on {@code openTelemetry} (nothing when {@code null}); call before {@link #start}. */
    public void traceWith(io.opentelemetry.api.OpenTelemetry openTelemetry, String brokerType) {
        state.tracing = MessageTracing.of(openTelemetry, brokerType, name());
    }

    /** Lets transactional runs that wrote to the outbox wake its relay once they committed. */
    public void onOutboxWrite(Runnable wake) {
        state.outboxWritten = wake;
    }

    public String name() {
        return state.config.name();
    }

    public PipelineConfig config() {
        return state.config;
    }

    /** Whether the pipeline consumes: started and not stopping. */
    public boolean running() {
        return state.running();
    }

    /** Deliveries handed over and not yet settled. */
    public int inFlight() {
        return state.limit.inFlight();
    }

    /**
     * Logs one info line with the outcomes since the previous call: processed, duplicates, failures,
     * dead letters and the rate. Called periodically from one thread.
     */
    public void logSummary() {
        PipelineMetrics metrics = state.metrics;
        long now = System.nanoTime();
        long[] totals = {metrics.processed.total(), metrics.duplicate.total(), metrics.failed.total(),
                metrics.deadLettered.total()};
        long[] delta = new long[totals.length];
        for (int i = 0; i < totals.length; i++) {
            delta[i] = totals[i] - summarized[i];
            summarized[i] = totals[i];
        }
        double seconds = Math.max(1e-9, (now - summarizedAt) / 1e9);
        summarizedAt = now;
        log.info("Pipeline '{}': {} processed, {} duplicates, {} failed, {} dead-lettered in {}s ({} msg/s); {} in"
                + " flight; totals {} processed, {} duplicates", state.name, delta[0], delta[1], delta[2],
                delta[3], Math.round(seconds), Math.round((delta[0] + delta[1]) / seconds), inFlight(), totals[0],
                totals[1]);
    }

    /**
     * Starts the workers and the lease keeper (on {@code keeperExecutor}), then subscribes to the source.
     *
     * @throws dev.idem.spi.BrokerException if the adapter cannot subscribe
     */
    public synchronized void start(BrokerAdapter adapter, ScheduledExecutorService keeperExecutor) {
        if (state.phase != Phase.NEW) {
            throw new IllegalStateException("Pipeline '" + name() + "' was already started");
        }
        PipelineConfig config = state.config;
        state.adapter = adapter;
        timers = new DelayedTasks("idem-" + name() + "-timer", state.ticker);
        scheduler = new KeyScheduler(name(), config.concurrency(), handlerLoader, runs, timers,
                config.transactional() ? config.transactionGroup() : 1);
        settle.orderThrough(scheduler);
        if (config.commit().batched() && !config.transactional()) {
            groupCommit = new GroupCommit(state, settle, scheduler);
            claimedRun.commitThrough(groupCommit);
        }
        intake.dispatchTo(scheduler);
        long tick = leaseKeeper.periodNanos();
        keeper = keeperExecutor.scheduleWithFixedDelay(leaseKeeper, tick, tick, TimeUnit.NANOSECONDS);
        state.phase = Phase.RUNNING;
        try {
            subscription = adapter.subscribe(
                    new SubscriptionRequest(name(), config.source(), config.maxInFlight(), config.deadLetter()), this);
        } catch (RuntimeException | Error e) {
            state.phase = Phase.STOPPED;
            keeper.cancel(false);
            scheduler.shutdownNow();
            if (groupCommit != null) {
                groupCommit.close();
            }
            timers.close();
            throw e;
        }
        state.metrics.watch(state);
        Subscription watched = subscription;
        backlogWatch = keeperExecutor.scheduleWithFixedDelay(() -> {
            try {
                state.metrics.backlog(watched.backlog());
            } catch (RuntimeException e) {
                log.debug("Pipeline '{}': the adapter could not tell its backlog ({})", name(), e.toString());
            }
        }, 0, BACKLOG_EVERY.toNanos(), TimeUnit.NANOSECONDS);
        log.info("Pipeline '{}' consuming '{}' (ordering {}, concurrency {}, lease {}, retention {})", name(),
                config.source(), config.ordering().name().toLowerCase(), config.concurrency(),
                ConfigKey.formatDuration(config.lease()), ConfigKey.formatDuration(config.retention()));
    }

    @Override
    public void onDeliveries(List<Delivery> batch) {
        intake.onDeliveries(batch);
    }

    /**
     * Stops gracefully: no new batches; in-flight messages finish until {@code deadlineNanos}
     * (System.nanoTime); then running handlers are interrupted and every message not finished is
     * released in the store and handed back to the broker unacked.
     *
     * @return true if everything in flight finished before the deadline
     */
    public boolean stop(long deadlineNanos) {
        Subscription sub;
        synchronized (this) {
            if (state.phase == Phase.STOPPED || state.phase == Phase.NEW) {
                state.phase = Phase.STOPPED;
                return true;
            }
            state.phase = Phase.DRAINING;
            sub = subscription;
        }
        boolean drained;
        try {
            if (sub != null) {
                sub.stop();
            }
            drained = state.limit.awaitDrained(deadlineNanos);
            if (!drained) {
                log.warn("Pipeline '{}': {} message(s) still in flight at the stop deadline; interrupting and"
                        + " releasing them", name(), inFlight());
                abort();
                state.limit.awaitDrained(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abort();
            drained = false;
        }
        scheduler.shutdown();
        try {
            if (!scheduler.awaitTermination(System.nanoTime() + TimeUnit.SECONDS.toNanos(5))) {
                scheduler.shutdownNow();
            }
        } catch (InterruptedException e) {
            scheduler.shutdownNow();
            Thread.currentThread().interrupt();
        }
        if (groupCommit != null) {
            groupCommit.close();
        }
        timers.close();
        if (keeper != null) {
            keeper.cancel(false);
        }
        if (backlogWatch != null) {
            backlogWatch.cancel(false);
        }
        if (sub != null) {
            sub.close();
        }
        state.phase = Phase.STOPPED;
        log.info("Pipeline '{}' stopped{}", name(), drained ? "" : " (some messages were handed back unfinished)");
        return drained;
    }

    private void abort() {
        state.phase = Phase.ABORTING;
        scheduler.abort();
        for (Batch batch : state.tracked) {
            for (Work w : batch.works) {
                w.interruptRun();
            }
        }
    }
}
