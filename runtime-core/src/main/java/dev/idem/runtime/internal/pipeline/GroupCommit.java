package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.CommitPolicy;
import dev.idem.runtime.internal.pipeline.StoreCalls.Completion;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
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
 * own result, then resumes its key through the work's {@link KeyScheduler.Slot}. A message is acked only after its
 * own completion is stored.
 *
 * <p>A batch goes when it is full, when the {@link CommitPolicy#linger() linger} has passed since its
 * first completion, or at once when no handler of the pipeline is running, since then no completion
 * could join it. While a batch is written, the next gathers. There are {@link CommitPolicy#writers()}
 * committers: while one writes, another sends the next batch only once it is full, so extra writers add
 * store writes in parallel only when completions come faster than one writer stores them, and batches
 * stay as large as with one. The committers start in {@link #start}. Thread-safe.
 */
final class GroupCommit {

    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    private final PipelineState s;
    private final StoreCalls store;
    private final Outcomes outcomes;
    private final Settlement settle;
    private final KeyScheduler.Running running;
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

    GroupCommit(PipelineState state, StoreCalls store, Outcomes outcomes, Settlement settle,
            KeyScheduler.Running running) {
        this.s = state;
        this.store = store;
        this.outcomes = outcomes;
        this.settle = settle;
        this.running = running;
        CommitPolicy policy = state.config.commit();
        this.batchSize = policy.batchSize();
        this.lingerNanos = policy.linger().toNanos();
        for (int i = 1; i <= policy.writers(); i++) {
            Thread committer = new Thread(this::commitLoop, "idem-" + state.name + "-commit" + (i == 1 ? "" : "-" + i));
            committer.setDaemon(true);
            committers.add(committer);
        }
        // A partial batch waiting for its linger goes as soon as no run is left that could add to it.
        running.whenIdle(this::wakeIfPending);
    }

    void start() {
        committers.forEach(Thread::start);
    }

    /** Takes the completion of a work whose handler succeeded under its claim; its key waits until it is written. */
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
            if (pending.size() == 1 || pending.size() >= batchSize || running.count() <= 1) {
                arrived.signal();
            }
        } finally {
            lock.unlock();
        }
        return Step.AWAIT;
    }

    private void wakeIfPending() {
        lock.lock();
        try {
            if (!pending.isEmpty()) {
                arrived.signal();
            }
        } finally {
            lock.unlock();
        }
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
            if (left <= 0 || running.count() == 0) {
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
        store.completeAll(batch, s::advanceOf, this::joinPending, batchSize, this::settle);
    }

    /** Up to {@code room} completions that came while the store failed: they join the retry rather than wait. */
    private List<Work> joinPending(int room) {
        List<Work> joining = new ArrayList<>();
        lock.lock();
        try {
            while (joining.size() < room && !pending.isEmpty()) {
                joining.add(pending.pollFirst());
            }
        } finally {
            lock.unlock();
        }
        return joining;
    }

    private void settle(Work w, Completion completion) {
        switch (completion) {
            case COMPLETED -> {
                w.claim.ended();
                settle.ack(w, outcomes.handled(w));
                w.slot.resume(Step.NEXT);
            }
            case NOT_OWNER -> {
                // Our lease ran out and another consumer took the key over: it decides the outcome.
                w.claim.lost();
                log.warn("Pipeline '{}': {} was handled but its lease had been taken over before completion;"
                        + " the new owner completes it", s.name, w.describe());
                settle.retryLater(w, Duration.ZERO, outcomes.leaseLost);
                w.slot.resume(Step.HANDED_BACK);
            }
            default -> {
                w.claim.ended();
                settle.retryLater(w, Duration.ZERO, outcomes.commitFailed);
                w.slot.resume(Step.HANDED_BACK);
            }
        }
    }

    private void giveBack(Work w) {
        w.claim.ended();
        settle.retryLater(w, Duration.ZERO);
        w.slot.resume(Step.HANDED_BACK);
    }
}
