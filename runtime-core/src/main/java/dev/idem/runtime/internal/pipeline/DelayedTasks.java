package dev.idem.runtime.internal.pipeline;

import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs short tasks once a delay has passed on the pipeline's ticker: parked keys (retry back-off,
 * deferral) wake up here, so no worker thread ever sleeps. One daemon thread; tasks must not block.
 *
 * <p>Deadlines are read from the injected ticker; while a task waits, the thread looks at the ticker at
 * least every {@link #MAX_WAIT_NANOS}, so a test that moves a manual ticker sees its tasks run without
 * sleeping. With nothing scheduled it sleeps until something is. The thread starts in {@link #start}.
 */
final class DelayedTasks {

    private static final Logger log = LoggerFactory.getLogger(DelayedTasks.class);
    private static final long MAX_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private record Task(long dueNanos, long sequence, Runnable action) implements Comparable<Task> {
        @Override
        public int compareTo(Task o) {
            int byTime = Long.compare(dueNanos - o.dueNanos, 0);
            return byTime != 0 ? byTime : Long.compare(sequence, o.sequence);
        }
    }

    private final LongSupplier ticker;
    private final PriorityQueue<Task> queue = new PriorityQueue<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Thread thread;
    private long sequence;
    private boolean closed;

    DelayedTasks(String name, LongSupplier ticker) {
        this.ticker = ticker;
        this.thread = new Thread(this::loop, name);
        thread.setDaemon(true);
    }

    /** Starts the timer thread; tasks scheduled before wait for it. */
    void start() {
        thread.start();
    }

    /** Runs {@code action} on the timer thread once {@code delayNanos} have passed on the ticker. */
    void schedule(long delayNanos, Runnable action) {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            Task task = new Task(ticker.getAsLong() + delayNanos, sequence++, action);
            queue.add(task);
            if (queue.peek() == task) {
                changed.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Stops the thread; tasks not yet due never run. */
    void close() {
        lock.lock();
        try {
            closed = true;
            queue.clear();
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    private void loop() {
        while (true) {
            Runnable due;
            lock.lock();
            try {
                while (true) {
                    if (closed) {
                        return;
                    }
                    Task head = queue.peek();
                    if (head == null) {
                        changed.await();
                        continue;
                    }
                    long wait = Math.min(MAX_WAIT_NANOS, head.dueNanos - ticker.getAsLong());
                    if (wait <= 0) {
                        due = queue.poll().action;
                        break;
                    }
                    changed.awaitNanos(wait);
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            try {
                due.run();
            } catch (RuntimeException e) {
                log.error("A delayed pipeline task failed", e);
            }
        }
    }
}
