package dev.idem.adapter.rocketmq;

import dev.idem.adapter.rocketmq.RocketMqDelivery.Settle;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The way back from the pipeline to the consumer thread: how many deliveries are handed over and not yet settled
 * (what leaves the pipeline room), and the settles queued for the consumer thread to apply, since only that thread
 * may touch the consumer and the queues' offsets.
 *
 * <p>Thread-safe. The settling threads (any thread of the pipeline, through {@link RocketMqSubscription#settled})
 * call {@link #settledOne()} and {@link #add}; the consumer thread calls the rest.
 */
final class SettleQueue {

    private final BlockingQueue<Settle> settles = new LinkedBlockingQueue<>();
    private final AtomicInteger unsettled = new AtomicInteger();

    /** Consumer thread: {@code count} deliveries were handed over to the pipeline. */
    void handedOver(int count) {
        unsettled.addAndGet(count);
    }

    /** Settling threads: one delivery was settled, whether or not its settle is queued. */
    void settledOne() {
        unsettled.decrementAndGet();
    }

    /** Settling threads: queues a settle for the consumer thread. */
    void add(Settle settle) {
        settles.add(settle);
    }

    /** Deliveries handed over and not yet settled. */
    int unsettled() {
        return unsettled.get();
    }

    /** Consumer thread: the next queued settle, or {@code null} when none is queued. */
    Settle poll() {
        return settles.poll();
    }

    /**
     * Consumer thread: the next queued settle, waiting up to {@code millis} for one.
     *
     * @return the settle, or {@code null} when none came in time or the thread was interrupted (its interrupt
     *         flag is then set again)
     */
    Settle poll(long millis) {
        try {
            return settles.poll(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
