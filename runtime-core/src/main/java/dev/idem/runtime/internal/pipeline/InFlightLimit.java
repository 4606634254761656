package dev.idem.runtime.internal.pipeline;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Bounds the deliveries a pipeline holds unsettled: the adapter's thread blocks in
 * {@link #acquire} until there is room. A batch larger than the bound is let in once nothing else
 * is in flight, so an oversized batch cannot deadlock.
 */
final class InFlightLimit {

    private final int max;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition roomFreed = lock.newCondition();
    private volatile int waiters;
    /** The smallest room a waiter needs; releases wake waiters only once that much is free. */
    private volatile int wanted = Integer.MAX_VALUE;

    InFlightLimit(int max) {
        this.max = max;
    }

    void acquire(int n) throws InterruptedException {
        if (tryAdd(n)) {
            return;
        }
        lock.lockInterruptibly();
        try {
            waiters++;
            try {
                while (!tryAdd(n)) {
                    wanted = Math.min(wanted, Math.min(n, max));
                    roomFreed.await(100, TimeUnit.MILLISECONDS);
                }
            } finally {
                waiters--;
                if (waiters == 0) {
                    wanted = Integer.MAX_VALUE;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private boolean tryAdd(int n) {
        while (true) {
            int current = inFlight.get();
            if (current > 0 && current + n > max) {
                return false;
            }
            if (inFlight.compareAndSet(current, current + n)) {
                return true;
            }
        }
    }

    void release(int n) {
        int left = inFlight.addAndGet(-n);
        // Waking a waiter that still cannot fit would cost a context switch per settled message.
        if (waiters > 0 && (left == 0 || max - left >= wanted)) {
            lock.lock();
            try {
                roomFreed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    int inFlight() {
        return inFlight.get();
    }

    /** Waits until nothing is in flight or the deadline (System.nanoTime) passes; true if drained. */
    boolean awaitDrained(long deadlineNanos) throws InterruptedException {
        while (inFlight.get() > 0) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            lock.lockInterruptibly();
            try {
                waiters++;
                try {
                    roomFreed.await(Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)), TimeUnit.NANOSECONDS);
                } finally {
                    waiters--;
                }
            } finally {
                lock.unlock();
            }
        }
        return true;
    }
}
