package dev.idem.runtime.pipeline;

import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.StoreKey;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * One delivery's way through a pipeline: its keys, its claim and the state of its current handler
 * run. Written by one thread at a time (the adapter's, then a worker's, handed over through the
 * scheduler's lock); the lease keeper reads the volatile fields and interrupts a run through
 * {@link #interruptIfOverdue}.
 */
final class Work {

    private static final int IDLE = 0;
    private static final int RUNNING = 1;
    private static final int INTERRUPTING = 2;
    private static final int INTERRUPTED = 3;

    // A field plus a VarHandle rather than an AtomicInteger: one object less per message.
    private static final VarHandle RUN_STATE;

    static {
        try {
            RUN_STATE = MethodHandles.lookup().findVarHandle(Work.class, "runState", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Delivery delivery;
    final InboundMessage message;

    /** The idempotency key without namespace; {@code null} when unprotected. */
    String key;
    /** Why the message is dead-lettered without a claim ({@code missing-id}, {@code invalid-id}), or null. */
    String rejectCause;
    String rejectDetail;
    StoreKey storeKey;
    String fingerprint;
    /** Whether this pipeline holds the key's claim; read by the lease keeper. */
    volatile boolean claimed;
    long token;
    int storeAttempt = 1;
    /** Whether the handler is to run for it (claimed, or unprotected by policy). */
    boolean dispatch;
    /**
     * The key its messages run in order under, or {@code null} when it is ordered with nothing
     * ({@code ordering: none}, or no key at all).
     */
    Object orderKey;
    /** The scheduler's queue of its ordering key; set when the scheduler takes it in. */
    Object schedulerQueue;
    /** Acquired by takeover after a lease ran out: its start is recorded and it runs alone. */
    boolean suspect;
    /** Deferred because another owner held the key: claim again once the ticker passes {@link #deferredUntil}. */
    boolean claimPending;
    long deferredUntil;
    /** How often it found its key held by another owner: the re-check back-off grows with it. */
    int deferrals;
    /** Handler runs made in this process for the current claim. */
    int runs;
    /** The store's count of recorded starts, for a suspect; 0 otherwise. */
    int startsRecorded;
    /** Later copies of the same key (same batch, or arrived while this one held it); they share its outcome. */
    List<Work> followers;
    /** The dispatched batch this work belongs to, for the lease keeper. */
    Batch batch;
    /** The sequence guard's aggregate, in the pipeline's namespace; {@code null} without the guard. */
    StoreKey aggregate;
    /** The event's sequence number under the guard, at least 1. */
    long sequenceNumber;
    /** When a set-aside event stops waiting for the numbers before it (ticker time); 0 until it first waits. */
    long gapDeadline;
    /** What the handler's last successful run emitted, to publish or write before the key completes; or null. */
    List<dev.idem.spi.OutboxStore.Emitted> emitted;
    /** The handler's last run rejected the message ({@code RejectedException}): settled as {@code rejected}. */
    boolean rejected;
    /** The delivery's span while tracing is on; ended when it is settled. */
    io.opentelemetry.api.trace.Span span;
    /** The last outcome counted for it (processed, duplicate, stale...): the span's outcome once acked. */
    String outcome;
    /** Whether it counts against the pipeline's in-flight limit until settled. */
    boolean counted;

    volatile long leaseRenewedAtNanos;
    /**
     * Inside its transactional run: the transaction holds the key's row, so a renewal would wait on it,
     * and a takeover waits for the transaction's end too.
     */
    volatile boolean inTransaction;
    volatile boolean leaseLost;

    private volatile int runState = IDLE;
    private volatile Thread runner;
    private volatile long deadlineNanos;
    private volatile boolean settled;

    Work(Delivery delivery) {
        this.delivery = delivery;
        this.message = delivery.message();
    }

    /**
     * Makes {@code follower} share this work's outcome, unless this work is already settled.
     * Synchronized with {@link #markSettled} so no follower attaches after the followers were settled.
     */
    synchronized boolean addFollower(Work follower) {
        if (settled) {
            return false;
        }
        if (followers == null) {
            followers = new ArrayList<>(2);
        }
        followers.add(follower);
        return true;
    }

    boolean isSettled() {
        return settled;
    }

    /** Marks the delivery settled; false if it already was, so no path settles twice. */
    synchronized boolean markSettled() {
        if (settled) {
            return false;
        }
        settled = true;
        return true;
    }

    void beginRun(long deadlineNanos) {
        this.deadlineNanos = deadlineNanos;
        this.runner = Thread.currentThread();
        runState = RUNNING;
    }

    /**
     * Ends the run; if the lease keeper is interrupting it, waits for the interrupt to land and
     * clears it, so it cannot hit the store call that follows.
     */
    void endRun() {
        if (!RUN_STATE.compareAndSet(this, RUNNING, IDLE)) {
            while (runState == INTERRUPTING) {
                Thread.onSpinWait();
            }
            Thread.interrupted();
            runState = IDLE;
        }
        runner = null;
    }

    /** Called by the lease keeper; returns true if it interrupted the run. */
    boolean interruptIfOverdue(long nowNanos) {
        if (runState != RUNNING || nowNanos - deadlineNanos < 0) {
            return false;
        }
        return interruptRun();
    }

    /** Interrupts the current handler run, if any; used by timeouts and by an aborted stop. */
    boolean interruptRun() {
        Thread thread = runner;
        if (thread == null || !RUN_STATE.compareAndSet(this, RUNNING, INTERRUPTING)) {
            return false;
        }
        thread.interrupt();
        runState = INTERRUPTED;
        return true;
    }

    boolean isRunning() {
        return runState == RUNNING;
    }

    /** For log lines: every message-derived value escaped, so none can forge a line. */
    String describe() {
        return "message " + (key != null ? "key '" + LogSafe.text(key) + "'" : "without key")
                + (message.brokerMessageId() != null ? " (broker id " + LogSafe.text(message.brokerMessageId()) + ")"
                        : "")
                + " from " + LogSafe.text(message.source());
    }
}
