package dev.idem.runtime.pipeline;

import dev.idem.runtime.config.CommitPolicy;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.StoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plain mode's completions, written in batches: a worker whose handler succeeded hands the work over
 * and returns {@link Step#AWAIT}, so its key holds while the worker runs other keys; a committer
 * thread sends the gathered completions in one {@code completeAll} call and settles each work by its
 * own result, then resumes its key. A message is acked only after its own completion is stored.
 *
 * <p>A batch goes when it is full, when the {@link CommitPolicy#linger() linger} has passed since its
 * first completion, or at once when no handler of the pipeline is running, since then no completion
 * could join it. While a batch is written, the next gathers. There are {@link CommitPolicy#writers()}
 * committers: while one writes, another sends the next batch only once it is full, so extra writers add
 * store writes in parallel only when completions come faster than one writer stores them, and batches
 * stay as large as with one. Thread-safe.
 */
final class GroupCommit {

    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);
    private static final int COMPLETE_TRIES = 8;

    private final PipelineState s;
    private final Settlement settle;
    private final KeyScheduler scheduler;
    private final int batchSize;
    private final long lingerNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<Work> pending = new ArrayDeque<>();
    private final List<Thread> committers = new ArrayList<>();
    private long firstPendingAt;
    /** How many committers are writing a batch; guarded by {@code lock}. */
    private int writing;
    private boolean closed;

    GroupCommit(PipelineState state, Settlement settle, KeyScheduler scheduler) {
        this.s = state;
        this.settle = settle;
        this.scheduler = scheduler;
        CommitPolicy policy = state.config.commit();
        this.batchSize = policy.batchSize();
        this.lingerNanos = policy.linger().toNanos();
        for (int i = 1; i <= policy.writers(); i++) {
            Thread committer = new Thread(this::commitLoop, "idem-" + state.name + "-commit" + (i == 1 ? "" : "-" + i));
            committer.setDaemon(true);
            committers.add(committer);
        }
        committers.forEach(Thread::start);
    }

    /** Takes the completion of a work whose handler succeeded under its claim; its key waits for {@link KeyScheduler#resume}. */
    Step submit(Work w) {
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("Pipeline '" + s.name + "' stopped committing");
            }
            if (pending.isEmpty()) {
                firstPendingAt = System.nanoTime();
            }
            pending.addLast(w);
            if (pending.size() == 1 || pending.size() >= batchSize || scheduler.running() <= 1) {
                arrived.signal();
            }
        } finally {
            lock.unlock();
        }
        return Step.AWAIT;
    }

    /** Writes what is pending, then ends the committer thread. Call after the last {@link #submit}. */
    void close() {
        lock.lock();
        try {
            closed = true;
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try {
            for (Thread committer : committers) {
                TimeUnit.NANOSECONDS.timedJoin(committer, Math.max(1, deadline - System.nanoTime()));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void commitLoop() {
        List<Work> batch = new ArrayList<>(batchSize);
        boolean wrote = false;
        while (true) {
            lock.lock();
            try {
                if (wrote) {
                    writing--;
                    wrote = false;
                }
                if (!awaitBatch()) {
                    return;
                }
                for (int i = 0; i < batchSize && !pending.isEmpty(); i++) {
                    batch.add(pending.pollFirst());
                }
                writing++;
                wrote = true;
                // The rest waited already; they go with the next batch at the latest one linger from now.
                firstPendingAt = System.nanoTime();
                if (pending.size() >= batchSize) {
                    arrived.signal();
                }
            } finally {
                lock.unlock();
            }
            try {
                commit(batch);
            } catch (Throwable t) {
                log.error("Pipeline '{}': writing {} completion(s) failed; handing the messages back", s.name,
                        batch.size(), t);
                for (Work w : batch) {
                    if (!w.isSettled()) {
                        giveBack(w);
                    }
                }
            }
            batch.clear();
        }
    }

    /**
     * Waits until a batch should go; false once closed with nothing pending. While another committer writes,
     * only a full batch goes. Under the lock.
     */
    private boolean awaitBatch() {
        while (true) {
            if (pending.isEmpty()) {
                if (closed) {
                    return false;
                }
                arrived.awaitUninterruptibly();
                continue;
            }
            if (closed || pending.size() >= batchSize) {
                return true;
            }
            if (writing > 0) {
                arrived.awaitUninterruptibly();
                continue;
            }
            long left = firstPendingAt + lingerNanos - System.nanoTime();
            if (left <= 0 || scheduler.running() == 0) {
                return true;
            }
            try {
                arrived.awaitNanos(left);
            } catch (InterruptedException e) {
                return true;
            }
        }
    }

    /** Completes the batch, asking again for keys whose write failed; settles and resumes every work. */
    private void commit(List<Work> batch) {
        List<Work> remaining = batch;
        Duration backoff = PipelineTiming.STORE_BACKOFF_MIN;
        StoreException lastFailure = null;
        for (int attempt = 1; ; attempt++) {
            List<CompletionRequest> requests = new ArrayList<>(remaining.size());
            for (Work w : remaining) {
                requests.add(new CompletionRequest(w.storeKey, w.token, s.config.retention(), s.advanceOf(w)));
            }
            List<Work> failed = new ArrayList<>();
            long start = System.nanoTime();
            try {
                List<CompletionResult> results = s.store.completeAll(requests);
                s.metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
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
                        s.storeDown |= f.cause().retriable();
                        failed.add(w);
                    } else {
                        anyStored = true;
                        settle(w, result instanceof CompletionResult.Completed);
                    }
                }
                if (anyStored) {
                    s.storeDown = false;
                }
            } catch (StoreException e) {
                s.metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                lastFailure = e;
                s.storeDown |= e.retriable();
                failed = remaining;
            }
            if (failed.isEmpty()) {
                return;
            }
            if (attempt >= COMPLETE_TRIES || !PipelineTiming.pause(backoff, s::aborting)) {
                for (Work w : failed) {
                    s.metrics.commitFailed.count(w);
                    log.error("Pipeline '{}': {} was handled but its completion could not be stored ({}); not acking"
                            + " it: it will run again once its lease ends", s.name, w.describe(),
                            lastFailure == null ? "unknown" : lastFailure.getMessage());
                    giveBack(w);
                }
                return;
            }
            backoff = backoff.multipliedBy(2);
            remaining = failed;
            joinPending(remaining);
        }
    }

    /** Completions that came while the store failed join the retry rather than wait for their own. */
    private void joinPending(List<Work> remaining) {
        lock.lock();
        try {
            while (remaining.size() < batchSize && !pending.isEmpty()) {
                remaining.add(pending.pollFirst());
            }
        } finally {
            lock.unlock();
        }
    }

    private void settle(Work w, boolean completed) {
        w.claimed = false;
        if (completed) {
            s.handledOutcome(w).count(w);
            settle.ack(w);
            scheduler.resume(w, Step.NEXT);
            return;
        }
        // Our lease ran out and another consumer took the key over: it decides the outcome.
        s.metrics.leaseLost.count(w);
        log.warn("Pipeline '{}': {} was handled but its lease had been taken over before completion;"
                + " the new owner completes it", s.name, w.describe());
        settle.retryLater(w, Duration.ZERO);
        scheduler.resume(w, Step.HANDED_BACK);
    }

    private void giveBack(Work w) {
        w.claimed = false;
        settle.retryLater(w, Duration.ZERO);
        scheduler.resume(w, Step.HANDED_BACK);
    }
}
