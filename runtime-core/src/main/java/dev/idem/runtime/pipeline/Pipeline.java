package dev.idem.runtime.pipeline;

import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.runtime.OutcomeListener;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import dev.idem.runtime.config.RetryPolicy;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.DedupStore;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One pipeline: takes batches from a broker subscription and runs each delivery through
 * key extraction, one batched claim, the handler (with timeout, retries and lease renewal),
 * the store's completion and then the broker ack. See DESIGN.md, "The pipeline".
 *
 * <p>Every delivery handed over is settled exactly once (ack, retry later or dead-letter) unless
 * the process dies or the stop deadline passes, in which case the broker redelivers it. Nothing is
 * acked before the store has recorded the key as completed, except duplicates the store already
 * knows and messages processed unprotected by the user's choice.
 */
public final class Pipeline implements DeliveryListener {

    private static final Logger log = LoggerFactory.getLogger(Pipeline.class);

    /** MDC keys set while a handler runs: the pipeline (on every lane thread) and the message's key. */
    public static final String MDC_PIPELINE = "idem.pipeline";
    public static final String MDC_KEY = "idem.key";

    private static final Duration STORE_BACKOFF_MIN = Duration.ofMillis(50);
    private static final Duration STORE_BACKOFF_MAX = Duration.ofSeconds(5);
    private static final int COMPLETE_TRIES = 8;

    private enum State { NEW, RUNNING, DRAINING, ABORTING, STOPPED }

    private final PipelineConfig config;
    private final String namespace;
    private final MessageHandler handler;
    private final DedupStore store;
    private final KeyResolver keys;
    private final PipelineMetrics metrics;
    private final Lanes lanes;
    private final InFlightLimit limit;
    private final System.Logger handlerLogger;
    /** Dispatched batches with work not yet finished: what the lease keeper watches. */
    private final Set<Batch> tracked = ConcurrentHashMap.newKeySet();
    /** Claims this pipeline holds, by key: a copy that comes while one is held follows it. */
    private final Map<String, Work> heldKeys = new ConcurrentHashMap<>();
    private final long leaseNanos;
    private final long renewAfterNanos;
    private final long handlerTimeoutNanos;
    private final boolean fingerprinting;
    /** The store, in transactional mode; null otherwise. */
    private final TransactionalDedupStore transactionalStore;

    private volatile State state = State.NEW;
    /**
     * Set when a store call failed retriably, cleared when one succeeds. While set, no handler run
     * starts: its completion could not be written, and it would run again once the store is back.
     */
    private volatile boolean storeDown;
    private volatile Subscription subscription;
    private ScheduledFuture<?> keeper;
    /** What the last summary line counted; touched only by the thread calling {@link #logSummary()}. */
    private final long[] summarized = new long[4];
    private long summarizedAt = System.nanoTime();

    public Pipeline(PipelineConfig config, MessageHandler handler, DedupStore store, List<IdExtractor> idExtractors,
            MeterRegistry registry, OutcomeListener outcomes) {
        this.config = config;
        this.namespace = config.name();
        this.handler = handler;
        this.store = store;
        this.keys = new KeyResolver(idExtractors, config.missingId());
        this.metrics = new PipelineMetrics(registry, config.name(), outcomes);
        this.lanes = new Lanes(config.name(), config.ordering(), config.concurrency(), handler.getClass().getClassLoader());
        this.limit = new InFlightLimit(config.maxInFlight());
        this.handlerLogger = System.getLogger("idem.handler." + config.name());
        this.leaseNanos = config.lease().toNanos();
        this.renewAfterNanos = leaseNanos / 3;
        this.handlerTimeoutNanos = config.handlerTimeout().toNanos();
        this.fingerprinting = config.fingerprint() == FingerprintMode.SHA256;
        if (config.transactional()) {
            if (!(store instanceof TransactionalDedupStore transactional)) {
                throw new ConfigException("pipelines." + config.name() + ".transactional is true, but the dedup store "
                        + store.getClass().getName() + " cannot record keys in the handler's transaction."
                        + " Use a store that can (store.type: jdbc), or set transactional: false");
            }
            this.transactionalStore = transactional;
        } else {
            this.transactionalStore = null;
        }
    }

    public String name() {
        return config.name();
    }

    public PipelineConfig config() {
        return config;
    }

    /** Whether the pipeline consumes: started and not stopping. */
    public boolean running() {
        return state == State.RUNNING;
    }

    /**
     * Logs one info line with the outcomes since the previous call: processed, duplicates, failures,
     * dead letters and the rate. Called periodically from one thread.
     */
    public void logSummary() {
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
                + " flight; totals {} processed, {} duplicates", namespace, delta[0], delta[1], delta[2], delta[3],
                Math.round(seconds), Math.round((delta[0] + delta[1]) / seconds), limit.inFlight(), totals[0], totals[1]);
    }

    /** Deliveries handed over and not yet settled. */
    public int inFlight() {
        return limit.inFlight();
    }

    /**
     * Subscribes to the pipeline's source and starts the lease keeper on {@code scheduler}.
     *
     * @throws dev.idem.spi.BrokerException if the adapter cannot subscribe
     */
    public synchronized void start(BrokerAdapter adapter, ScheduledExecutorService scheduler) {
        if (state != State.NEW) {
            throw new IllegalStateException("Pipeline '" + namespace + "' was already started");
        }
        long tick = Math.max(TimeUnit.MILLISECONDS.toNanos(5),
                Math.min(TimeUnit.SECONDS.toNanos(1), Math.min(leaseNanos / 6, handlerTimeoutNanos / 4)));
        keeper = scheduler.scheduleWithFixedDelay(this::keepLeases, tick, tick, TimeUnit.NANOSECONDS);
        state = State.RUNNING;
        subscription = adapter.subscribe(
                new SubscriptionRequest(namespace, config.source(), config.maxInFlight(), config.deadLetter()), this);
        log.info("Pipeline '{}' consuming '{}' (ordering {}, concurrency {}, lease {}, retention {})", namespace,
                config.source(), config.ordering().name().toLowerCase(), config.concurrency(),
                ConfigKey.formatDuration(config.lease()), ConfigKey.formatDuration(config.retention()));
    }

    // ---------------------------------------------------------------- receive, extract, claim

    @Override
    public void onDeliveries(List<Delivery> batch) {
        if (batch.isEmpty()) {
            return;
        }
        if (state != State.RUNNING) {
            for (Delivery d : batch) {
                retryLater(new Work(d), Duration.ZERO);
            }
            return;
        }
        try {
            limit.acquire(batch.size());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            for (Delivery d : batch) {
                retryLater(new Work(d), Duration.ZERO);
            }
            return;
        }
        if (state != State.RUNNING) {
            // Stopped while this batch waited for room: hand it back untouched.
            for (Delivery d : batch) {
                Work w = new Work(d);
                w.counted = true;
                retryLater(w, Duration.ZERO);
            }
            return;
        }
        Work[] works = new Work[batch.size()];
        try {
            process(batch, works);
        } catch (RuntimeException | Error e) {
            // A bug of ours must neither kill the adapter's thread nor leave deliveries unsettled.
            log.error("Pipeline '{}' failed to process a batch of {}; handing unsettled deliveries back", namespace,
                    batch.size(), e);
            for (int i = 0; i < works.length; i++) {
                Work w = works[i];
                if (w == null) {
                    w = new Work(batch.get(i));
                    w.counted = true;
                }
                if (w.batch == null) {
                    abandon(w);
                }
            }
        }
    }

    private void process(List<Delivery> batch, Work[] works) {
        int n = batch.size();
        List<ClaimRequest> requests = new ArrayList<>(n);
        List<Work> claiming = new ArrayList<>(n);
        // A key repeated within the batch follows its first copy's outcome instead of being deferred
        // by the store for a whole lease (which on Kafka would stall the partition).
        Map<String, Work> firstCopies = n > 1 ? new HashMap<>(n * 2) : null;
        for (int i = 0; i < n; i++) {
            Work w = new Work(batch.get(i));
            w.counted = true;
            works[i] = w;
            keys.resolve(w);
            if (w.key != null) {
                w.storeKey = new StoreKey(namespace, w.key);
                w.fingerprint = fingerprinting ? Fingerprints.sha256(w.message.payload()) : null;
                if (firstCopies != null) {
                    Work first = firstCopies.putIfAbsent(w.key, w);
                    if (first != null && Objects.equals(first.fingerprint, w.fingerprint)) {
                        first.addFollower(w);
                        continue;
                    }
                }
                if (transactionalStore != null) {
                    // The claim is the insert inside the handler's own transaction, made on the worker.
                    w.dispatch = true;
                } else {
                    requests.add(new ClaimRequest(w.storeKey, w.fingerprint, config.lease(), config.retention()));
                    claiming.add(w);
                }
            } else if (w.rejectCause == null) {
                metrics.unprotected.count(w);
                w.dispatch = true;
            } else {
                deadLetter(w, w.rejectCause, w.rejectDetail, 0);
            }
        }
        if (!requests.isEmpty() && !claimAll(requests, claiming)) {
            for (Work w : claiming) {
                retryLater(w, STORE_BACKOFF_MAX);
            }
        }
        List<Work> runnable = new ArrayList<>(n);
        for (Work w : works) {
            if (w.dispatch) {
                runnable.add(w);
            }
        }
        if (!runnable.isEmpty()) {
            tracked.add(new Batch(runnable));
            lanes.dispatch(runnable, this::run, this::abandonAll);
        }
    }

    /**
     * Claims the batch, retrying a failing store with back-off; false if it stayed unavailable.
     * A key found in progress with no holder in this pipeline may have been completed by this very
     * pipeline between the store's answer and the look-up: those are asked once more before being deferred.
     */
    private boolean claimAll(List<ClaimRequest> requests, List<Work> claiming) {
        List<ClaimResult> results = claimWithRetry(requests);
        if (results == null) {
            return false;
        }
        List<ClaimRequest> recheckRequests = null;
        List<Work> recheck = null;
        for (int j = 0; j < requests.size(); j++) {
            if (!apply(claiming.get(j), results.get(j), true)) {
                if (recheck == null) {
                    recheckRequests = new ArrayList<>();
                    recheck = new ArrayList<>();
                }
                recheckRequests.add(requests.get(j));
                recheck.add(claiming.get(j));
            }
        }
        if (recheck != null) {
            List<ClaimResult> again = claimWithRetry(recheckRequests);
            for (int j = 0; j < recheck.size(); j++) {
                if (again == null) {
                    retryLater(recheck.get(j), STORE_BACKOFF_MAX);
                } else {
                    apply(recheck.get(j), again.get(j), false);
                }
            }
        }
        return true;
    }

    private List<ClaimResult> claimWithRetry(List<ClaimRequest> requests) {
        long giveUpAt = System.nanoTime() + Math.min(leaseNanos, TimeUnit.SECONDS.toNanos(30));
        Duration backoff = STORE_BACKOFF_MIN;
        while (true) {
            long start = System.nanoTime();
            try {
                List<ClaimResult> results = store.claim(requests);
                metrics.claim.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                storeDown = false;
                if (results.size() != requests.size()) {
                    throw new StoreException("The store answered " + results.size() + " results for a batch of "
                            + requests.size() + " claims", false);
                }
                return results;
            } catch (StoreException e) {
                metrics.claim.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                storeDown |= e.retriable();
                if (state != State.RUNNING || System.nanoTime() + backoff.toNanos() - giveUpAt > 0) {
                    log.warn("Pipeline '{}': the store could not claim a batch of {} ({}); handing it back to the"
                            + " broker unacked", namespace, requests.size(), e.getMessage());
                    metrics.storeUnavailable.count(requests.size());
                    return null;
                }
                log.warn("Pipeline '{}': the store could not claim a batch of {} ({}); retrying in {}", namespace,
                        requests.size(), e.getMessage(), ConfigKey.formatDuration(backoff));
                if (!pause(backoff)) {
                    metrics.storeUnavailable.count(requests.size());
                    return null;
                }
                backoff = backoff.multipliedBy(2).compareTo(STORE_BACKOFF_MAX) > 0 ? STORE_BACKOFF_MAX
                        : backoff.multipliedBy(2);
            }
        }
    }

    /** Acts on one claim result; false when an in-progress answer should be asked again first. */
    private boolean apply(Work w, ClaimResult result, boolean mayRecheck) {
        if (result instanceof ClaimResult.Acquired acquired) {
            w.claimed = true;
            w.token = acquired.token();
            w.storeAttempt = acquired.attempt();
            w.leaseRenewedAtNanos = System.nanoTime();
            heldKeys.put(w.key, w);
            if (acquired.attempt() > config.maxDeliveries()) {
                deadLetter(w, "max-deliveries", "the key was claimed " + acquired.attempt()
                        + " times without completing (max-deliveries " + config.maxDeliveries()
                        + "): consumers died or lost their lease while handling it", acquired.attempt() - 1);
            } else {
                w.dispatch = true;
            }
        } else if (result instanceof ClaimResult.Duplicate duplicate) {
            onDuplicate(w, duplicate.fingerprintMatches());
        } else if (result instanceof ClaimResult.InProgress inProgress) {
            Work holder = heldKeys.get(w.key);
            if (holder != null && Objects.equals(holder.fingerprint, w.fingerprint) && holder.addFollower(w)) {
                return true;
            }
            if (holder == null && mayRecheck) {
                return false;
            }
            metrics.deferred.count(w);
            retryLater(w, inProgress.retryAfter());
        }
        return true;
    }

    private void onDuplicate(Work w, boolean fingerprintMatches) {
        if (fingerprintMatches) {
            metrics.duplicate.count(w);
            ack(w);
            return;
        }
        metrics.fingerprintMismatch.count(w);
        switch (config.fingerprintMismatch()) {
            case SKIP:
                metrics.duplicate.count(w);
                ack(w);
                break;
            case PROCESS:
                // The key belongs to the completed message: run this one without a claim.
                w.storeKey = null;
                w.dispatch = true;
                metrics.unprotected.count(w);
                break;
            default:
                deadLetter(w, "fingerprint-mismatch", "the key '" + w.key
                        + "' was completed for a message with another payload", 0);
        }
    }

    // ---------------------------------------------------------------- run, complete, ack

    private void run(Work w) {
        try {
            if (state == State.ABORTING || state == State.STOPPED) {
                abandon(w);
            } else if (transactionalStore != null && w.storeKey != null) {
                executeTransactional(w);
            } else {
                execute(w);
            }
        } catch (RuntimeException | Error e) {
            log.error("Pipeline '{}' failed while handling {}; handing it back to the broker", namespace,
                    w.describe(), e);
            abandon(w);
        } finally {
            finished(w);
        }
    }

    private void finished(Work w) {
        if (w.batch.finish()) {
            tracked.remove(w.batch);
        }
    }

    private void execute(Work w) {
        if (storeDown && w.claimed) {
            // The claim stays until its lease ends; the redelivery is deferred until then, then taken over.
            metrics.storeUnavailable.count(w);
            retryLater(w, STORE_BACKOFF_MAX);
            return;
        }
        RetryPolicy retry = config.retry();
        int storeRunsBefore = w.storeAttempt - 1;
        Throwable failure = null;
        int run = 0;
        while (true) {
            run++;
            failure = runHandler(w, storeRunsBefore + run);
            if (failure == null) {
                break;
            }
            if (state == State.ABORTING) {
                abandon(w);
                return;
            }
            if (failure instanceof NonRetryableException || run >= retry.maxAttempts() || w.leaseLost) {
                break;
            }
            metrics.retried.count(w);
            log.debug("Pipeline '{}': {} failed on run {} ({}); retrying", namespace, w.describe(), run,
                    failure.toString());
            if (!pause(retry.backoffBefore(run + 1))) {
                abandon(w);
                return;
            }
        }
        if (failure == null) {
            commit(w);
            return;
        }
        metrics.failed.count(w);
        if (w.leaseLost) {
            // Another consumer owns the key now and runs it; this copy goes back to find its outcome.
            metrics.leaseLost.count(w);
            retryLater(w, Duration.ZERO);
            return;
        }
        String cause = failure instanceof NonRetryableException ? "non-retryable" : "handler-failed";
        log.warn("Pipeline '{}': {} failed after {} run(s); dead-lettering it: {}", namespace, w.describe(), run,
                failure.toString());
        deadLetter(w, cause, failure.toString(), storeRunsBefore + run);
    }

    /**
     * Transactional mode: each run is one database transaction that records the key as completed and
     * holds the handler's writes; commit, then ack. A failed run rolled back everything, so it is retried
     * or dead-lettered with nothing to release.
     */
    private void executeTransactional(Work w) {
        // No storeDown gate here: with no claim made beforehand, the transaction itself is the probe.
        RetryPolicy retry = config.retry();
        for (int run = 1; ; run++) {
            int attempt = run;
            long start = System.nanoTime();
            long deadline = start + handlerTimeoutNanos;
            TransactionalDedupStore.Outcome outcome = null;
            Throwable failure = null;
            w.beginRun(deadline);
            MDC.put(MDC_KEY, w.key);
            try {
                outcome = transactionalStore.runOnce(w.storeKey, w.fingerprint, config.retention(),
                        tx -> handler.handle(new DeliveredMessage(w.message, w.key, attempt),
                                new RunContext(namespace, handlerLogger, deadline, tx)));
            } catch (Throwable t) {
                failure = t;
            } finally {
                w.endRun();
                MDC.remove(MDC_KEY);
                metrics.handler.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
            }
            if (failure instanceof VirtualMachineError vme) {
                throw vme;
            }
            if (failure == null) {
                switch (outcome) {
                    case COMMITTED:
                        metrics.processed.count(w);
                        ack(w);
                        break;
                    case DUPLICATE:
                        onDuplicate(w, true);
                        break;
                    default:
                        onDuplicate(w, false);
                        if (w.dispatch && w.storeKey == null) {
                            execute(w);
                        }
                }
                return;
            }
            if (state == State.ABORTING) {
                retryLater(w, Duration.ZERO);
                return;
            }
            boolean storeFailed = failure instanceof StoreException;
            if (failure instanceof NonRetryableException || run >= retry.maxAttempts()) {
                if (storeFailed) {
                    metrics.storeUnavailable.count(w);
                    log.warn("Pipeline '{}': the store failed {} times on {} ({}); handing it back unacked", namespace,
                            run, w.describe(), failure.getMessage());
                    retryLater(w, STORE_BACKOFF_MAX);
                    return;
                }
                metrics.failed.count(w);
                log.warn("Pipeline '{}': {} failed after {} run(s), rolled back; dead-lettering it: {}", namespace,
                        w.describe(), run, failure.toString());
                deadLetter(w, failure instanceof NonRetryableException ? "non-retryable" : "handler-failed",
                        failure.toString(), run);
                return;
            }
            metrics.retried.count(w);
            if (!pause(retry.backoffBefore(run + 1))) {
                retryLater(w, Duration.ZERO);
                return;
            }
        }
    }

    /** Runs the handler once; returns its failure, or null on success. */
    private Throwable runHandler(Work w, int attempt) {
        long start = System.nanoTime();
        w.beginRun(start + handlerTimeoutNanos);
        Throwable failure = null;
        MDC.put(MDC_KEY, w.key);
        try {
            handler.handle(new DeliveredMessage(w.message, w.key, attempt),
                    new RunContext(namespace, handlerLogger, start + handlerTimeoutNanos, null));
        } catch (Throwable t) {
            failure = t;
        } finally {
            MDC.remove(MDC_KEY);
            w.endRun();
            metrics.handler.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
        if (failure instanceof VirtualMachineError vme) {
            throw vme;
        }
        return failure;
    }

    private void commit(Work w) {
        if (!w.claimed) {
            metrics.processed.count(w);
            ack(w);
            return;
        }
        Duration backoff = STORE_BACKOFF_MIN;
        for (int attempt = 1; ; attempt++) {
            long start = System.nanoTime();
            try {
                boolean completed = store.complete(w.storeKey, w.token, config.retention());
                metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                storeDown = false;
                if (completed) {
                    w.claimed = false;
                    metrics.processed.count(w);
                    ack(w);
                } else {
                    // Our lease ran out and another consumer took the key over: it decides the outcome.
                    w.claimed = false;
                    metrics.leaseLost.count(w);
                    log.warn("Pipeline '{}': {} was handled but its lease had been taken over before completion;"
                            + " the new owner completes it", namespace, w.describe());
                    retryLater(w, Duration.ZERO);
                }
                return;
            } catch (StoreException e) {
                metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                storeDown |= e.retriable();
                if (attempt >= COMPLETE_TRIES || !pause(backoff)) {
                    metrics.commitFailed.count(w);
                    log.error("Pipeline '{}': {} was handled but its completion could not be stored ({});"
                            + " not acking it: it will run again once its lease ends", namespace, w.describe(),
                            e.getMessage());
                    w.claimed = false;
                    retryLater(w, Duration.ZERO);
                    return;
                }
                backoff = backoff.multipliedBy(2);
            }
        }
    }

    // ---------------------------------------------------------------- settle

    private void ack(Work w) {
        if (!w.markSettled()) {
            return;
        }
        try {
            w.delivery.ack();
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': the broker refused the ack of {} ({}); it will come back as a duplicate",
                    namespace, w.describe(), e.getMessage());
        } finally {
            settled(w);
        }
        if (w.followers != null) {
            for (Work follower : w.followers) {
                metrics.duplicate.count(w);
                ack(follower);
            }
        }
    }

    private void retryLater(Work w, Duration delay) {
        if (!w.markSettled()) {
            return;
        }
        try {
            w.delivery.retryLater(delay);
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': could not hand {} back to the broker ({}); it redelivers it on its own",
                    namespace, w.describe(), e.getMessage());
        } finally {
            settled(w);
        }
        handBackFollowers(w);
    }

    private void settled(Work w) {
        if (w.counted) {
            limit.release(1);
        }
        if (w.key != null) {
            heldKeys.remove(w.key, w);
        }
    }

    /** The first copy was not completed: its followers go back to the broker to be claimed on their own. */
    private void handBackFollowers(Work w) {
        if (w.followers != null) {
            for (Work follower : w.followers) {
                retryLater(follower, Duration.ZERO);
            }
        }
    }

    /**
     * Releases the key (so an operator's replay from the dead-letter destination is processed), then
     * dead-letters. If the key cannot be released the message goes back unacked instead, since a key
     * left claimed would make the replay look like yet another crashed attempt.
     */
    private void deadLetter(Work w, String cause, String detail, int attempts) {
        if (w.claimed && !release(w)) {
            retryLater(w, STORE_BACKOFF_MAX);
            return;
        }
        if (!w.markSettled()) {
            return;
        }
        try {
            w.delivery.deadLetter(new DeadLetterReason(cause, detail, attempts, namespace));
            metrics.deadLettered.count(w);
        } catch (RuntimeException e) {
            log.error("Pipeline '{}': could not dead-letter {} ({}); it stays unacked and will be redelivered",
                    namespace, w.describe(), e.getMessage());
        } finally {
            settled(w);
        }
        handBackFollowers(w);
    }

    /** Gives the claim back and returns the delivery unacked: used when stopping. */
    private void abandon(Work w) {
        if (w.claimed) {
            release(w);
        }
        retryLater(w, Duration.ZERO);
    }

    private void abandonAll(List<Work> works) {
        for (Work w : works) {
            abandon(w);
            finished(w);
        }
    }

    private boolean release(Work w) {
        long start = System.nanoTime();
        try {
            store.release(w.storeKey, w.token);
            w.claimed = false;
            return true;
        } catch (StoreException e) {
            log.warn("Pipeline '{}': could not release {} ({}); its lease runs out on its own", namespace,
                    w.describe(), e.getMessage());
            return false;
        } finally {
            metrics.release.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
    }

    /** Sleeps unless the pipeline is aborting; false if it was interrupted or is aborting. */
    private boolean pause(Duration duration) {
        long until = System.nanoTime() + duration.toNanos();
        long left;
        while ((left = until - System.nanoTime()) > 0) {
            if (state == State.ABORTING || Thread.currentThread().isInterrupted()) {
                return false;
            }
            LockSupport.parkNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
        }
        return state != State.ABORTING;
    }

    // ---------------------------------------------------------------- leases and timeouts

    /** Renews the leases of claims held longer than a third of the lease, and interrupts overdue runs. */
    private void keepLeases() {
        long now = System.nanoTime();
        for (Batch batch : tracked) {
            for (Work w : batch.works) {
                keep(w, now);
            }
        }
    }

    private void keep(Work w, long now) {
        try {
            if (w.interruptIfOverdue(now)) {
                log.warn("Pipeline '{}': {} ran past its handler-timeout of {}; interrupted", namespace,
                        w.describe(), ConfigKey.formatDuration(config.handlerTimeout()));
            }
            if (w.claimed && !w.leaseLost && now - w.leaseRenewedAtNanos >= renewAfterNanos) {
                renew(w, now);
            }
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': lease upkeep of {} failed", namespace, w.describe(), e);
        }
    }

    private void renew(Work w, long now) {
        long start = System.nanoTime();
        try {
            if (store.renew(w.storeKey, w.token, config.lease())) {
                w.leaseRenewedAtNanos = now;
            } else if (w.claimed) {
                w.leaseLost = true;
                log.warn("Pipeline '{}': the lease of {} was taken over by another consumer", namespace,
                        w.describe());
            }
        } catch (StoreException e) {
            log.warn("Pipeline '{}': could not renew the lease of {} ({}); retrying", namespace, w.describe(),
                    e.getMessage());
        } finally {
            metrics.renew.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
    }

    // ---------------------------------------------------------------- stop

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
            if (state == State.STOPPED || state == State.NEW) {
                state = State.STOPPED;
                return true;
            }
            state = State.DRAINING;
            sub = subscription;
        }
        boolean drained;
        try {
            if (sub != null) {
                sub.stop();
            }
            drained = limit.awaitDrained(deadlineNanos);
            if (!drained) {
                log.warn("Pipeline '{}': {} message(s) still in flight at the stop deadline; interrupting and"
                        + " releasing them", namespace, limit.inFlight());
                state = State.ABORTING;
                for (Batch batch : tracked) {
                    for (Work w : batch.works) {
                        w.interruptRun();
                    }
                }
                limit.awaitDrained(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            state = State.ABORTING;
            drained = false;
        }
        lanes.shutdown();
        try {
            if (!lanes.awaitTermination(System.nanoTime() + TimeUnit.SECONDS.toNanos(5))) {
                lanes.shutdownNow();
            }
        } catch (InterruptedException e) {
            lanes.shutdownNow();
            Thread.currentThread().interrupt();
        }
        if (keeper != null) {
            keeper.cancel(false);
        }
        if (sub != null) {
            sub.close();
        }
        state = State.STOPPED;
        log.info("Pipeline '{}' stopped{}", namespace, drained ? "" : " (some messages were handed back unfinished)");
        return drained;
    }
}
