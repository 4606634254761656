package dev.idem.adapter.rabbitmq;

import dev.idem.spi.BrokerException;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer channel of a subscription and the thread that hands its deliveries to the pipeline. When the
 * channel closes under it (connection lost, queue deleted), the thread opens a new one, backing off between
 * failed attempts; deliveries of the old channel that were not yet handed over are dropped, as the broker
 * requeues them. Thread-safe.
 */
final class ConsumerWorker {

    private static final Logger log = LoggerFactory.getLogger(ConsumerWorker.class);
    private static final long MIN_BACKOFF_MS = 100;
    private static final long MAX_BACKOFF_MS = 5_000;
    private static final long POLL_MS = 1_000;

    private final Supplier<ChannelSession> opener;
    private final DeliveryListener listener;
    private final int maxBatch;
    private final Thread thread;
    private final CountDownLatch stopSignal = new CountDownLatch(1);
    private volatile ChannelSession session;
    private volatile boolean stopped;

    /**
     * Opens the first channel in the caller's thread, so that a queue that cannot be consumed fails the
     * subscription at once.
     *
     * @throws BrokerException if the first channel cannot consume
     */
    ConsumerWorker(String name, Supplier<ChannelSession> opener, DeliveryListener listener, int maxBatch) {
        this.opener = opener;
        this.listener = listener;
        this.maxBatch = maxBatch;
        this.session = opener.get();
        this.thread = new Thread(this::run, name);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void run() {
        long backoff = MIN_BACKOFF_MS;
        while (!stopped) {
            if (session == null || !session.isOpen()) {
                try {
                    session = opener.get();
                    backoff = MIN_BACKOFF_MS;
                    log.info("Consuming queue '{}' again on a new channel", session.queue());
                } catch (BrokerException | IllegalStateException e) {
                    log.warn("Cannot consume again yet, retrying in {}ms: {}", backoff, e.getMessage());
                    if (await(backoff)) {
                        return;
                    }
                    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
                    continue;
                }
            }
            dispatch(session);
        }
        // Stopped: what arrived and was never handed over goes back now, for other consumers to take.
        ChannelSession last = session;
        if (last != null && last.isOpen()) {
            try {
                last.cancel(); // again, in case stop() raced with the opening of this channel
                last.requeueUnhandedOver();
            } catch (BrokerException e) {
                log.warn("Could not hand back deliveries of queue '{}' at stop; they come back when the channel "
                        + "closes: {}", last.queue(), e.getMessage());
            }
        }
    }

    /** Hands over batches of {@code current} until its channel closes or the worker stops. */
    private void dispatch(ChannelSession current) {
        List<RabbitDelivery> batch = new ArrayList<>(maxBatch);
        while (!stopped) {
            batch.clear();
            boolean open;
            try {
                open = current.poll(batch, maxBatch, POLL_MS);
            } catch (InterruptedException e) {
                return;
            }
            if (!open) {
                if (!stopped) {
                    log.warn("The channel consuming queue '{}' closed; {} deliveries not handed over will come "
                            + "again", current.queue(), batch.size());
                }
                return;
            }
            if (stopped) {
                // Stopped while polling: these were never handed over, so they go back to the queue now.
                batch.forEach(d -> {
                    try {
                        current.requeue(d.tag());
                    } catch (BrokerException e) {
                        log.debug("Could not requeue delivery {} at stop: {}", d.tag(), e.getMessage());
                    }
                });
            } else if (!batch.isEmpty()) {
                try {
                    listener.onDeliveries(List.<Delivery>copyOf(batch));
                } catch (RuntimeException e) {
                    log.error("The pipeline threw on a batch of queue '{}'; its deliveries come back when the "
                            + "channel closes", current.queue(), e);
                }
            }
        }
    }

    private boolean await(long millis) {
        try {
            return stopSignal.await(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            return true;
        }
    }

    /** Cancels the consumer so nothing new arrives; settles still work until {@link #close()}. */
    void stop() {
        stopped = true;
        stopSignal.countDown();
        ChannelSession s = session;
        if (s != null) {
            s.cancel();
        }
    }

    /** Stops, waits a little for the hand-over thread, and closes the channel: unsettled deliveries go back. */
    void close() {
        stop();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            thread.interrupt();
        }
        ChannelSession s = session;
        if (s != null) {
            s.close();
        }
    }
}
