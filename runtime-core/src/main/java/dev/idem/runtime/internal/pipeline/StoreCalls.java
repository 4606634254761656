package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.PipelineConfig;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every call a pipeline makes to its dedup store outside transactional runs, and the one owner of what goes
 * with them: the timing of each call ({@code idem.store.duration}), how often and how long a failing call is tried
 * again (back-off from {@value #BACKOFF_MIN_MILLIS} ms doubling to {@value #BACKOFF_MAX_MILLIS} ms, in real
 * time), the log line of a failure, and whether the store is down ({@link #isDown}: set by a retriable failure,
 * cleared by the next call that succeeds). Callers get answers, never exceptions, and decide what to do with the
 * message; a call that keeps failing sleeps the calling thread between tries. The exception: a durable step's calls
 * ({@link #steps}, {@link #recordStep}), made from inside the handler, end its run with the store's failure once
 * given up. Thread-safe.
 */
final class StoreCalls {

    private static final Logger log = LoggerFactory.getLogger(StoreCalls.class);

    static final long BACKOFF_MIN_MILLIS = 50;
    static final long BACKOFF_MAX_MILLIS = 5_000;
    /** The first back-off of a failing call. */
    static final Duration BACKOFF_MIN = Duration.ofMillis(BACKOFF_MIN_MILLIS);
    /** The longest back-off, and how long a message handed back for a store outage waits before it comes again. */
    static final Duration BACKOFF_MAX = Duration.ofMillis(BACKOFF_MAX_MILLIS);
    /** How often a completion that fails for another reason than an unreachable store is tried. */
    static final int COMPLETE_TRIES = 8;

    /** What became of a completion. */
    enum Completion {
        /** Stored: the key is completed and the message may be acked. */
        COMPLETED,
        /** The store refused it: another owner took the key over, and decides the outcome. */
        NOT_OWNER,
        /** Not stored after every try: the message goes back unacked and runs again once its lease ends. */
        FAILED
    }

    /** What became of a lease renewal. */
    enum Renewal { RENEWED, TAKEN_OVER, FAILED }

    private final PipelineState s;
    private final String pipeline;
    private final DedupStore store;
    private final PipelineConfig config;
    private final PipelineMetrics metrics;
    private final Duration backoffMin;
    private final Duration backoffMax;
    private volatile boolean down;

    /** @param state the pipeline's phase: a claim gives up once the pipeline stops running, every call once it aborts */
    StoreCalls(PipelineState state, DedupStore store, PipelineMetrics metrics) {
        this(state, store, metrics, BACKOFF_MIN, BACKOFF_MAX);
    }

    /** With other back-off bounds: tests that go through many tries. */
    StoreCalls(PipelineState state, DedupStore store, PipelineMetrics metrics, Duration backoffMin,
            Duration backoffMax) {
        this.s = state;
        this.pipeline = state.name;
        this.config = state.config;
        this.store = store;
        this.metrics = metrics;
        this.backoffMin = backoffMin;
        this.backoffMax = backoffMax;
    }

    DedupStore store() {
        return store;
    }

    /**
     * Whether the last store call failed retriably and none succeeded since. While it is, no handler run starts in
     * plain mode: its completion could not be written, and it would run again once the store is back.
     */
    boolean isDown() {
        return down;
    }

    private void failed(StoreException e) {
        if (e.retriable()) {
            down = true;
        }
    }

    private void answered() {
        down = false;
    }

    /**
     * Claims in one call, trying again with back-off while the store fails, for at most the lease (and 30 s);
     * {@code null} if it stayed unavailable or the pipeline stopped meanwhile.
     */
    List<ClaimResult> claim(List<ClaimRequest> requests) {
        long giveUpAt = System.nanoTime() + Math.min(config.lease().toNanos(), TimeUnit.SECONDS.toNanos(30));
        Duration backoff = backoffMin;
        while (true) {
            long start = System.nanoTime();
            try {
                List<ClaimResult> results = store.claim(requests);
                metrics.claim.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                answered();
                if (results.size() != requests.size()) {
                    throw new StoreException("The store answered " + results.size() + " results for a batch of "
                            + requests.size() + " claims", false);
                }
                return results;
            } catch (StoreException e) {
                metrics.claim.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                failed(e);
                if (!s.running() || System.nanoTime() + backoff.toNanos() - giveUpAt > 0) {
                    log.warn("Pipeline '{}': the store could not claim a batch of {} ({}); handing it back to the"
                            + " broker unacked", pipeline, requests.size(), e.getMessage());
                    return null;
                }
                log.warn("Pipeline '{}': the store could not claim a batch of {} ({}); retrying in {}", pipeline,
                        requests.size(), e.getMessage(), ConfigKey.formatDuration(backoff));
                if (!pause(backoff)) {
                    return null;
                }
                backoff = twice(backoff);
            }
        }
    }

    /**
     * Completes {@code w}'s key on its own (raising its sequence watermark). A completion the store could not take
     * is tried again with the same fencing token, with back-off: while the store is unreachable (a retriable
     * failure) for as long as it takes, since nobody can take the key over meanwhile and a completion that gives up
     * makes the handler run again; after {@value #COMPLETE_TRIES} tries for any other failure. It gives up when the
     * pipeline aborts (a stop past its deadline): the message then goes back unacked.
     */
    Completion complete(Work w, SequenceAdvance advance) {
        Duration backoff = backoffMin;
        StoreException firstFailure = null;
        for (int attempt = 1; ; attempt++) {
            long start = System.nanoTime();
            try {
                boolean completed = w.run.reply != null ? completeWithReply(w, advance)
                        : advance == null ? store.complete(w.storeKey, w.claim.token(), config.retention())
                        : ((SequencedDedupStore) store).completeAndAdvance(w.storeKey, w.claim.token(),
                                config.retention(), advance);
                metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                answered();
                if (firstFailure != null) {
                    log.info("Pipeline '{}': the completion of {} was stored after {} tries", pipeline, w.describe(),
                            attempt);
                }
                return completed ? Completion.COMPLETED : Completion.NOT_OWNER;
            } catch (StoreException e) {
                metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                failed(e);
                if (firstFailure == null) {
                    firstFailure = e;
                    logWaiting("the completion of " + w.describe(), e);
                }
                if (!keepTrying(e, attempt) || !pause(backoff)) {
                    logNotStored(w, e);
                    return Completion.FAILED;
                }
                backoff = twice(backoff);
            }
        }
    }

    /** Completes {@code w}'s key with the run's reply, in one atomic step of the {@link ReplyStore}. */
    private boolean completeWithReply(Work w, SequenceAdvance advance) {
        ReplyStore replies = (ReplyStore) store;
        if (advance == null) {
            return replies.completeWithReply(w.storeKey, w.claim.token(), config.retention(), w.run.reply);
        }
        CompletionResult result = replies.completeAll(List.of(new CompletionRequest(w.storeKey, w.claim.token(),
                config.retention(), advance, w.run.reply))).get(0);
        if (result instanceof CompletionResult.Failed failed) {
            throw failed.cause();
        }
        return result == CompletionResult.COMPLETED;
    }

    /**
     * Completes a batch in {@code completeAll} calls: each work's answer goes to {@code answered} as soon as the
     * store gave it; the keys whose write failed are asked again with back-off, as {@link #complete} does (for as
     * long as the store is unreachable, {@value #COMPLETE_TRIES} tries for another failure, until the pipeline
     * aborts), joined by up to the batch size of completions {@code joining} hands over meanwhile; a work whose
     * completion is given up is answered {@link Completion#FAILED}.
     *
     * @param advances each work's sequence watermark to raise with its key, or {@code null}
     */
    void completeAll(List<Work> batch, Function<Work, SequenceAdvance> advances,
            IntFunction<List<Work>> joining, int batchSize, BiConsumer<Work, Completion> answered) {
        List<Work> remaining = batch;
        Duration backoff = backoffMin;
        StoreException lastFailure = null;
        boolean waited = false;
        for (int attempt = 1; ; attempt++) {
            List<CompletionRequest> requests = new ArrayList<>(remaining.size());
            for (Work w : remaining) {
                requests.add(new CompletionRequest(w.storeKey, w.claim.token(), config.retention(), advances.apply(w),
                        w.run.reply));
            }
            List<Work> failed = new ArrayList<>();
            long start = System.nanoTime();
            try {
                List<CompletionResult> results = store.completeAll(requests);
                metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                if (results.size() != remaining.size()) {
                    throw new StoreException("The store answered " + results.size() + " results for "
                            + remaining.size() + " completions", false);
                }
                boolean anyStored = false;
                for (int i = 0; i < results.size(); i++) {
                    Work w = remaining.get(i);
                    CompletionResult result = results.get(i);
                    if (result instanceof CompletionResult.Failed f) {
                        lastFailure = f.cause();
                        failed(f.cause());
                        failed.add(w);
                    } else {
                        anyStored = true;
                        answered.accept(w, result instanceof CompletionResult.Completed ? Completion.COMPLETED
                                : Completion.NOT_OWNER);
                    }
                }
                if (anyStored) {
                    answered();
                }
            } catch (StoreException e) {
                metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                lastFailure = e;
                failed(e);
                failed = remaining;
            }
            if (failed.isEmpty()) {
                if (waited) {
                    log.info("Pipeline '{}': a batch of completions was stored after {} tries", pipeline, attempt);
                }
                return;
            }
            if (!waited) {
                waited = true;
                logWaiting("a batch of " + failed.size() + " completion(s)", lastFailure);
            }
            if (!keepTrying(lastFailure, attempt) || !pause(backoff)) {
                for (Work w : failed) {
                    logNotStored(w, lastFailure);
                    answered.accept(w, Completion.FAILED);
                }
                return;
            }
            backoff = twice(backoff);
            remaining = failed;
            if (remaining.size() < batchSize) {
                remaining.addAll(joining.apply(batchSize - remaining.size()));
            }
        }
    }

    /** Whether a completion that failed with {@code failure} on try {@code attempt} is tried again. */
    private static boolean keepTrying(StoreException failure, int attempt) {
        return failure.retriable() || attempt < COMPLETE_TRIES;
    }

    private void logWaiting(String what, StoreException failure) {
        log.warn("Pipeline '{}': the store could not take {} ({}); trying again with the same token{}; the message"
                + " stays unacked meanwhile", pipeline, what, failure.getMessage(),
                failure.retriable() ? " for as long as the store is unreachable"
                        : ", up to " + COMPLETE_TRIES + " times");
    }

    private void logNotStored(Work w, StoreException failure) {
        log.error("Pipeline '{}': {} was handled but its completion could not be stored ({}); not acking it: it will"
                + " run again once its lease ends", pipeline, w.describe(),
                failure == null ? "unknown" : failure.getMessage());
    }

    /** Gives {@code w}'s claim back; false (logged) when the store could not, and its lease runs out on its own. */
    boolean release(Work w) {
        long start = System.nanoTime();
        try {
            store.release(w.storeKey, w.claim.token());
            return true;
        } catch (StoreException e) {
            log.warn("Pipeline '{}': could not release {} ({}); its lease runs out on its own", pipeline,
                    w.describe(), e.getMessage());
            return false;
        } finally {
            metrics.release.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
    }

    /** Renews {@code w}'s lease; a failure is logged and tried again on the lease keeper's next round. */
    Renewal renew(Work w) {
        long start = System.nanoTime();
        try {
            return store.renew(w.storeKey, w.claim.token(), config.lease()) ? Renewal.RENEWED : Renewal.TAKEN_OVER;
        } catch (StoreException e) {
            log.warn("Pipeline '{}': could not renew the lease of {} ({}); retrying", pipeline, w.describe(),
                    e.getMessage());
            return Renewal.FAILED;
        } finally {
            metrics.renew.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
    }

    /**
     * Records a suspect's start before its handler runs: the store's count of starts, 0 when another owner has the
     * key now, {@link DedupStore#STARTS_NOT_RECORDED} from a store that does not count them, or {@code null} when
     * the store failed (logged).
     */
    Integer recordStart(Work w) {
        try {
            int starts = store.recordStart(w.storeKey, w.claim.token());
            answered();
            return starts;
        } catch (StoreException e) {
            failed(e);
            log.warn("Pipeline '{}': could not record the start of suspect {} ({}); handing it back", pipeline,
                    w.describe(), e.getMessage());
            return null;
        }
    }

    /** The sequence watermark of {@code w}'s aggregate, or {@code null} when the store failed (logged). */
    Long watermark(Work w, StoreKey aggregate) {
        try {
            long watermark = ((SequencedDedupStore) store).watermark(aggregate);
            answered();
            return watermark;
        } catch (StoreException e) {
            failed(e);
            log.warn("Pipeline '{}': could not read the sequence watermark of {} ({}); handing it back", pipeline,
                    w.describe(), e.getMessage());
            return null;
        }
    }

    /**
     * The durable steps recorded for {@code w}'s claim ({@link StepStore#steps}); empty when another owner has the
     * key. Tried again with back-off as {@link #recordStep} is.
     *
     * @throws StoreException the last failure, once given up
     */
    Optional<Map<String, byte[]>> steps(Work w) {
        StepStore steps = (StepStore) store;
        return tried("reading the steps of " + w.describe(), metrics.steps,
                () -> steps.steps(w.storeKey, w.claim.token()));
    }

    /**
     * Records a durable step of {@code w}'s claim ({@link StepStore#recordStep}); false when another owner has the
     * key. A record the store cannot take is tried again with the same token, with back-off: while the store is
     * unreachable (a retriable failure) until the run's thread is interrupted (its {@code handler-timeout}) or the
     * pipeline aborts, since the step's action has run and giving up makes a later run run it again; after
     * {@value #COMPLETE_TRIES} tries for any other failure.
     *
     * @throws StoreException the last failure, once given up
     */
    boolean recordStep(Work w, String name, byte[] value) {
        StepStore steps = (StepStore) store;
        return tried("recording step '" + LogSafe.text(name) + "' of " + w.describe(), metrics.recordStep,
                () -> steps.recordStep(w.storeKey, w.claim.token(), name, value));
    }

    /** Calls the store, trying again as {@link #recordStep} says; {@code what} names the call in log lines. */
    private <T> T tried(String what, Timer timer, Supplier<T> call) {
        Duration backoff = backoffMin;
        StoreException firstFailure = null;
        for (int attempt = 1; ; attempt++) {
            long start = System.nanoTime();
            try {
                T answer = call.get();
                answered();
                if (firstFailure != null) {
                    log.info("Pipeline '{}': {} succeeded after {} tries", pipeline, what, attempt);
                }
                return answer;
            } catch (StoreException e) {
                failed(e);
                if (firstFailure == null) {
                    firstFailure = e;
                    log.warn("Pipeline '{}': the store failed {} ({}); trying again with the same token{}", pipeline,
                            what, e.getMessage(), e.retriable() ? " while it is unreachable"
                                    : ", up to " + COMPLETE_TRIES + " times");
                }
                if (!keepTrying(e, attempt) || !pause(backoff)) {
                    log.warn("Pipeline '{}': gave up {} after {} tries ({})", pipeline, what, attempt, e.getMessage());
                    throw e;
                }
                backoff = twice(backoff);
            } finally {
                timer.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
            }
        }
    }

    /** Sleeps in real time while the store recovers; false if interrupted or the pipeline is aborting. */
    private boolean pause(Duration duration) {
        long until = System.nanoTime() + duration.toNanos();
        long left;
        while ((left = until - System.nanoTime()) > 0) {
            if (s.aborting() || Thread.currentThread().isInterrupted()) {
                return false;
            }
            LockSupport.parkNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
        }
        return !s.aborting();
    }

    private Duration twice(Duration backoff) {
        return backoff.multipliedBy(2).compareTo(backoffMax) > 0 ? backoffMax : backoff.multipliedBy(2);
    }
}
