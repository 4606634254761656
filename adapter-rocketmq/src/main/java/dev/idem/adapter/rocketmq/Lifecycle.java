package dev.idem.adapter.rocketmq;

/**
 * Where one subscription stands: running, stopped (no new batches are handed over; deliveries already handed over
 * still settle) or closing (the consumer thread commits, hands the consumer to a background shutdown and ends;
 * settles are ignored). Closing implies stopped.
 *
 * <p>Thread-safe. Written by whichever thread calls {@link RocketMqSubscription#stop()} or
 * {@link RocketMqSubscription#close()}; read by the consumer thread, the dispatcher thread and the settling threads.
 */
final class Lifecycle {

    private volatile boolean stopped;
    private volatile boolean closing;

    void stop() {
        stopped = true;
    }

    void close() {
        stopped = true;
        closing = true;
    }

    boolean stopped() {
        return stopped;
    }

    boolean closing() {
        return closing;
    }
}
