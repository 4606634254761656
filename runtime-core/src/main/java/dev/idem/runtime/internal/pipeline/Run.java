package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.OutboxStore;
import dev.idem.spi.StoredReply;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The run phase of a {@link Work}: its handler runs in this process, the one running now (thread, deadline,
 * whether it is being interrupted) and what the last successful run produced. Written by the worker running the
 * work; the lease keeper and an aborting stop only interrupt a run through {@link #interruptIfOverdue} and
 * {@link #interrupt}, whose handshake with {@link #end} guarantees that an interrupt never outlives the run it was
 * meant for, so it cannot hit the store call that follows the handler.
 */
final class Run {

    private static final int IDLE = 0;
    private static final int RUNNING = 1;
    private static final int INTERRUPTING = 2;
    private static final int INTERRUPTED = 3;

    // A field plus a VarHandle rather than an AtomicInteger: one object less per message.
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Run.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Handler runs made in this process for the current claim. */
    int count;
    /** What the last successful run emitted, to publish or write before the key completes; or null. */
    List<OutboxStore.Emitted> emitted;
    /** The last run rejected the message ({@code RejectedException}): settled as {@code rejected}. */
    boolean rejected;
    /** What the last successful run replied ({@code context.reply}), or null. */
    StoredReply reply;
    /** The reply was written to the outbox with the run's transaction: the outbox relay publishes it. */
    boolean replyInOutbox;
    /**
     * Inside its transactional run: the transaction holds the key's row, so a renewal would wait on it, and a
     * takeover waits for the transaction's end too.
     */
    volatile boolean inTransaction;

    private volatile int state = IDLE;
    private volatile Thread runner;
    private volatile long deadlineNanos;

    /** The calling thread starts a handler run that may take until {@code deadlineNanos} (ticker time). */
    void begin(long deadlineNanos) {
        this.deadlineNanos = deadlineNanos;
        this.runner = Thread.currentThread();
        emitted = null;
        rejected = false;
        reply = null;
        replyInOutbox = false;
        state = RUNNING;
    }

    /**
     * Ends the run; if an interrupt is on its way, waits for it to land and clears it, so it cannot hit the store
     * call that follows.
     */
    void end() {
        if (!STATE.compareAndSet(this, RUNNING, IDLE)) {
            while (state == INTERRUPTING) {
                Thread.onSpinWait();
            }
            Thread.interrupted();
            state = IDLE;
        }
        runner = null;
    }

    /** The lease keeper's check; true if it interrupted a run past its deadline. */
    boolean interruptIfOverdue(long nowNanos) {
        if (state != RUNNING || nowNanos - deadlineNanos < 0) {
            return false;
        }
        return interrupt();
    }

    /** Interrupts the run going on, if any: a timeout, or an aborted stop. */
    boolean interrupt() {
        Thread thread = runner;
        if (thread == null || !STATE.compareAndSet(this, RUNNING, INTERRUPTING)) {
            return false;
        }
        thread.interrupt();
        state = INTERRUPTED;
        return true;
    }

    boolean running() {
        return state == RUNNING;
    }
}
