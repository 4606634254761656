package dev.idem.spi;

import java.util.List;

/**
 * Receives batches of deliveries from a {@link BrokerAdapter} subscription. Implemented by the
 * runtime's pipeline.
 *
 * <p>Called from the adapter's consumer threads, one batch at a time per thread. It may block to
 * apply back-pressure, until the pipeline has room for the batch. It does not throw; it settles every
 * delivery of the batch later, from any thread.
 */
@FunctionalInterface
public interface DeliveryListener {

    void onDeliveries(List<Delivery> batch);

    /**
     * The broker took these deliveries away from this consumer: the partitions or queues they came from were revoked
     * or given up in a rebalance, and the broker will hand their messages to the new owner from its last committed
     * position. Called by the adapter, on its consumer thread (possibly while another of its threads is in
     * {@link #onDeliveries}), with the deliveries of those partitions or queues it handed over and had not seen
     * settled, once it stopped waiting for them; an adapter whose broker redelivers a lost consumer's messages on its
     * own need not call it.
     *
     * <p>The runtime stops holding those of them that do not run now (waiting behind another message of their key,
     * set aside for a sequence gap, parked on a retry or deferral timer): it releases their claims in the store, so
     * the new owner can claim them at once, and hands them back through {@link Delivery#retryLater}, which on a
     * revoked partition or queue settles nothing. A delivery whose handler runs now finishes normally. It may be called
     * for deliveries already settled, or not known to the runtime, and more than once for the same ones: those are
     * ignored. It does not throw, and it may call the store, so it may take as long as a store call per delivery.
     *
     * @param revoked the deliveries taken away, as they were handed to {@link #onDeliveries}
     */
    default void onRevoked(List<Delivery> revoked) {
    }
}
