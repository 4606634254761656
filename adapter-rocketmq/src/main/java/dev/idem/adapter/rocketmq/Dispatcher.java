package dev.idem.adapter.rocketmq;

import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dispatcher thread of one subscription: hands the batches the consumer thread prepared to the pipeline's
 * listener, in order, so that the pipeline's work on a batch (ID extraction, store claims) overlaps with fetching
 * and decoding the next one instead of stalling the consumer. After {@link RocketMqSubscription#stop()}, batches not
 * yet handed over are handed back (retry without delay) instead.
 *
 * <p>The consumer thread calls {@link #dispatch}; the subscribing thread calls {@link #start()}; the closing thread
 * calls {@link #join}. The listener is called on the dispatcher thread alone, one batch at a time.
 */
final class Dispatcher {

    private static final Logger log = LoggerFactory.getLogger(Dispatcher.class);

    private final String pipeline;
    private final DeliveryListener listener;
    private final Lifecycle lifecycle;
    /** Batches the consumer thread prepared, for the dispatcher thread to hand to the listener. */
    private final BlockingQueue<List<Delivery>> batches = new LinkedBlockingQueue<>();
    private final Thread thread;

    Dispatcher(String pipeline, DeliveryListener listener, Lifecycle lifecycle) {
        this.pipeline = pipeline;
        this.listener = listener;
        this.lifecycle = lifecycle;
        this.thread = new Thread(this::run, "idem-rocketmq-dispatch-" + pipeline);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Consumer thread: queues a batch the pipeline has room for. */
    void dispatch(List<Delivery> batch) {
        batches.add(batch);
    }

    /**
     * Tells the listener that the broker took {@code revoked} away (their partitions or queues went to another
     * consumer), on the calling thread, so that the pipeline stops holding those it does not run: the consumer thread
     * when a rebalance takes queues away, this thread when that happened while it handed their deliveries over.
     */
    void revoked(List<Delivery> revoked) {
        if (revoked.isEmpty()) {
            return;
        }
        try {
            listener.onRevoked(revoked);
        } catch (RuntimeException e) {
            log.error("The listener of pipeline '{}' threw on {} revoked deliveries", pipeline, revoked.size(), e);
        }
    }

    boolean runsOnCurrentThread() {
        return Thread.currentThread() == thread;
    }

    void join(long millis) throws InterruptedException {
        thread.join(millis);
    }

    private void run() {
        while (!lifecycle.closing()) {
            List<Delivery> batch;
            try {
                batch = batches.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (batch == null || lifecycle.closing()) {
                continue;
            }
            if (lifecycle.stopped()) {
                batch.forEach(d -> d.retryLater(Duration.ZERO));
                continue;
            }
            List<Delivery> owned = ofQueuesStillOwned(batch, true);
            if (owned.isEmpty()) {
                continue;
            }
            try {
                listener.onDeliveries(owned);
            } catch (RuntimeException e) {
                log.error("The listener of pipeline '{}' threw; its deliveries come back after a restart or rebalance",
                        pipeline, e);
            }
            // A queue revoked while the listener took the batch in: the consumer thread's revoked() may have looked
            // for these deliveries before the pipeline held them, so they are given up again, now that it does.
            revoked(ofQueuesStillOwned(owned, false));
        }
    }

    /**
     * The deliveries of {@code batch} whose queue this consumer still owns ({@code owned} true), or those whose queue
     * was revoked (false). A batch is cut on the consumer thread and handed over here later; a queue revoked in
     * between goes to its new owner, which receives these messages, so they are not handed to the pipeline (where,
     * set aside for a sequence gap, they would hold their claims against that owner until the gap timeout).
     */
    private static List<Delivery> ofQueuesStillOwned(List<Delivery> batch, boolean owned) {
        List<Delivery> out = new ArrayList<>(owned ? batch.size() : 0);
        for (Delivery d : batch) {
            if (((RocketMqDelivery) d).queue.revoked != owned) {
                out.add(d);
            }
        }
        return out;
    }
}
