package dev.idem.runtime.internal.pipeline;

import dev.idem.api.BatchHandler;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.OutcomeListener;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.internal.pipeline.PipelineState.Phase;
import dev.idem.runtime.internal.plugin.PluginContext;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStore;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.spi.TransactionalDedupStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pipeline: takes batches from a broker subscription and runs each delivery through key extraction, one
 * batched claim, the handler (with timeout, retries and lease renewal), the store's completion and then the broker
 * ack. The semantics are in {@code docs/design.md}; the stages, their threads and the queues between them in
 * {@code docs/architecture.md}.
 *
 * <p>Every stage is built here, in the constructor, complete: {@link Intake} (keys and the batched claim, on the
 * adapter's thread), {@link KeyScheduler} (per-key queues and the workers), {@link Runs} with a
 * {@link RunStrategy} ({@link ClaimedRun} or {@link TransactionalRun}), {@link GroupCommit} (plain mode's batched
 * completions), {@link Settlement} (every broker settle) and {@link LeaseKeeper}; they share {@link StoreCalls},
 * {@link InFlight} and {@link Outcomes}, each the one owner of its state. {@link #start} starts their threads and
 * subscribes. Retry back-off, deferrals, leases and handler timeouts run on the injected ticker; the group commit's
 * linger and the back-off of a failing store call are real time.
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

    /** Reads the subscription's backlog into {@code idem.backlog} every so often. */
    private static final Duration BACKLOG_EVERY = Duration.ofSeconds(5);

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
     * What the runtime gives every pipeline.
     *
     * @param meters where the pipeline's meters go
     * @param outcomes told of every outcome counted; may be {@code null}
     * @param ticker the time source of retries, deferrals, leases and handler timeouts ({@link System#nanoTime} in
     *        production)
     * @param openTelemetry traces each delivery; {@code null} for none
     * @param brokerType the broker's id, for the spans' {@code messaging.system}
     * @param outboxWritten called after a transactional run that wrote to the outbox committed (wakes the relay)
     * @param keyDigest what the store keeps of each key ({@code store.key-digest})
     */
    public record Environment(MeterRegistry meters, OutcomeListener outcomes, LongSupplier ticker,
            OpenTelemetry openTelemetry, String brokerType, Runnable outboxWritten, KeyDigest keyDigest) {
        public Environment {
            Objects.requireNonNull(meters, "meters");
            Objects.requireNonNull(ticker, "ticker");
            Objects.requireNonNull(keyDigest, "keyDigest");
            outboxWritten = outboxWritten == null ? () -> { } : outboxWritten;
        }
    }

    private final PipelineState state;
    private final PipelineMetrics metrics;
    private final Outcomes outcomes;
    private final InFlight inFlight;
    private final DelayedTasks timers;
    private final KeyScheduler scheduler;
    /** Batched completions in plain mode; {@code null} in transactional mode or with {@code commit.batch-size: 1}. */
    private final GroupCommit groupCommit;
    private final Intake intake;
    private final LeaseKeeper leaseKeeper;
    /** The sequence guard, or {@code null}. */
    private final Sequences sequences;
    private volatile Subscription subscription;
    private ScheduledFuture<?> keeper;
    private ScheduledFuture<?> backlogWatch;
    /** What the last summary line counted; touched only by the thread calling {@link #logSummary()}. */
    private final long[] summarized = new long[4];
    private long summarizedAt = System.nanoTime();

    /**
     * Builds every stage of the pipeline; nothing runs until {@link #start}.
     *
     * @throws ConfigException if the pipeline is transactional and the store cannot be, or has a sequence guard
     *         and the store keeps no watermarks
     */
    public Pipeline(PipelineConfig config, MessageHandler handler, DedupStore store, Extractors extractors,
            Environment environment) {
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
        boolean batching = handler instanceof BatchHandler;
        if (batching) {
            requireBatchable(config, handler, transactionalStore);
        }
        this.state = new PipelineState(config, handler, environment.ticker(),
                MessageTracing.of(environment.openTelemetry(), environment.brokerType(), config.name()),
                environment.keyDigest());
        this.metrics = new PipelineMetrics(environment.meters(), config.name());
        this.outcomes = new Outcomes(environment.meters(), config.name(), environment.outcomes());
        this.inFlight = new InFlight(config.maxInFlight());
        StoreCalls storeCalls = new StoreCalls(state, store, metrics);
        state.replies = new Replies(state, store, PluginContext.unwrap(store).getClass().getName(),
                config.replyMaxSize(), metrics);
        Settlement settle = new Settlement(state, inFlight, outcomes, storeCalls);
        Claims claims = new Claims(state, storeCalls, inFlight, outcomes, settle);
        this.sequences = config.sequence() == null ? null
                : new Sequences(state, storeCalls, outcomes, settle, extractors.aggregate(), extractors.number());
        KeyScheduler.Running running = new KeyScheduler.Running();
        boolean plain = transactionalStore == null;
        this.groupCommit = plain && config.commit().batched()
                ? new GroupCommit(state, storeCalls, outcomes, settle, running) : null;
        Steps steps = new Steps(state, storeCalls, metrics);
        ClaimedRun claimed = new ClaimedRun(state, settle, outcomes, metrics, steps, storeCalls, groupCommit);
        RunStrategy strategy = plain ? claimed
                : new TransactionalRun(state, settle, outcomes, metrics, steps, transactionalStore,
                        environment.outboxWritten(), claims, claimed, sequences);
        BatchRun batches = null;
        if (batching) {
            metrics.watchBatches();
            batches = new BatchRun(state, settle, metrics, strategy, storeCalls);
        }
        int group = batching ? config.batchSize() : plain ? 1 : config.transactionGroup();
        Runs runs = new Runs(state, settle, claims, storeCalls, outcomes, strategy, sequences, plain, group, batches);
        this.timers = new DelayedTasks("idem-" + config.name() + "-timer", state.ticker);
        this.scheduler = new KeyScheduler(config.name(), config.concurrency(), handler.getClass().getClassLoader(),
                runs, timers, group, Sequences.ORDER, running,
                batching ? new KeyScheduler.Batching(config.batchSize(), config.batchLinger().toNanos()) : null);
        this.intake = new Intake(state, inFlight, new KeyResolver(extractors.id(), config.missingId()),
                new OrderKeys(config.ordering(), extractors.ordering()), claims, outcomes, settle, scheduler,
                sequences);
        this.leaseKeeper = new LeaseKeeper(state, inFlight, storeCalls);
    }

    /** What a batch handler cannot be combined with, said at startup. */
    private static void requireBatchable(PipelineConfig config, MessageHandler handler,
            TransactionalDedupStore transactionalStore) {
        String path = "pipelines." + config.name();
        String what = "the handler " + handler.getClass().getName() + " is a batch handler (BatchHandler)";
        if (config.sequence() != null) {
            throw new ConfigException(path + ".sequence is set, but " + what + ": the sequence guard runs one event"
                    + " at a time per aggregate, against its watermark. Use a MessageHandler for sequenced events, or"
                    + " remove the sequence section");
        }
        if (config.transactionGroupChosen()) {
            throw new ConfigException(path + ".transactional.group is " + config.transactionGroup() + ", but " + what
                    + ", whose whole batch is one transaction already. Set batch.size instead, and remove"
                    + " transactional.group");
        }
        if (transactionalStore != null && !transactionalStore.runsBatches()) {
            throw new ConfigException(path + ".transactional is true and " + what + ", but the dedup store "
                    + PluginContext.unwrap(transactionalStore).getClass().getName() + " cannot run a batch in one"
                    + " transaction. Use a store that can (store.type: jdbc), set transactional: false, or use a"
                    + " MessageHandler");
        }
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
        return inFlight.count();
    }

    /**
     * Logs one info line with the outcomes since the previous call: processed, duplicates, failures,
     * dead letters and the rate. Called periodically from one thread.
     */
    public void logSummary() {
        long now = System.nanoTime();
        long[] totals = {outcomes.processed.total(), outcomes.duplicate.total(), outcomes.failed.total(),
                outcomes.deadLettered.total()};
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
     * Starts the timers, the workers, the committers and the lease keeper (on {@code keeperExecutor}), then
     * subscribes to the source.
     *
     * @throws dev.idem.spi.BrokerException if the adapter cannot subscribe
     */
    public synchronized void start(BrokerAdapter adapter, ScheduledExecutorService keeperExecutor) {
        if (state.phase != Phase.NEW) {
            throw new IllegalStateException("Pipeline '" + name() + "' was already started");
        }
        PipelineConfig config = state.config;
        state.adapter = adapter;
        timers.start();
        scheduler.start();
        if (groupCommit != null) {
            groupCommit.start();
        }
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
        metrics.watch(inFlight, state.ticker);
        if (sequences != null) {
            metrics.watchSequences(sequences);
        }
        Subscription watched = subscription;
        backlogWatch = keeperExecutor.scheduleWithFixedDelay(() -> {
            try {
                metrics.backlog(watched.backlog());
            } catch (RuntimeException e) {
                log.debug("Pipeline '{}': the adapter could not tell its backlog ({})", name(), e.toString());
            }
        }, 0, BACKLOG_EVERY.toNanos(), TimeUnit.NANOSECONDS);
        log.info("Pipeline '{}' consuming '{}' (ordering {}, concurrency {}, lease {}, retention {})", name(),
                config.source(), config.ordering().name().toLowerCase(Locale.ROOT), config.concurrency(),
                ConfigKey.formatDuration(config.lease()), ConfigKey.formatDuration(config.retention()));
    }

    @Override
    public void onDeliveries(List<Delivery> batch) {
        intake.onDeliveries(batch);
    }

    /**
     * The broker took these deliveries away (a partition or queue revoked in a rebalance): those not running now are
     * handed back, their claims released, so that their new owner can claim them at once instead of waiting for
     * them behind this process (see {@link KeyScheduler#revoke}). Runs on the adapter's thread; never throws.
     */
    @Override
    public void onRevoked(List<Delivery> revoked) {
        if (revoked.isEmpty()) {
            return;
        }
        try {
            Set<Delivery> gone = Collections.newSetFromMap(new IdentityHashMap<>(revoked.size() * 2));
            gone.addAll(revoked);
            List<Work> works = new ArrayList<>();
            inFlight.forEachUnsettled(w -> {
                if (gone.contains(w.delivery)) {
                    works.add(w);
                }
            });
            int handedBack = works.isEmpty() ? 0 : scheduler.revoke(works);
            log.info("Pipeline '{}': the broker took {} deliveries away; {} of them in flight here, {} handed back"
                    + " unfinished for their new owner, the others finish", name(), revoked.size(), works.size(),
                    handedBack);
        } catch (RuntimeException e) {
            log.error("Pipeline '{}' failed to give up revoked deliveries; they are held until their own end", name(),
                    e);
        }
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
            drained = inFlight.awaitDrained(deadlineNanos);
            if (!drained) {
                log.warn("Pipeline '{}': {} message(s) still in flight at the stop deadline; interrupting and"
                        + " releasing them", name(), inFlight());
                abort();
                inFlight.awaitDrained(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
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
        inFlight.forEachUnsettled(w -> w.run.interrupt());
    }
}
