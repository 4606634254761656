package dev.idem.adapter.rocketmq;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * What the broker still holds for one consumer, per message queue, for {@link RocketMqSubscription#backlog()}: the
 * queue's end (its max offset, asked of the broker) minus where the group stands (the last commit, else the first
 * offset handed over, else the committed offset the client read when the queue was assigned).
 *
 * <p>Its own daemon thread asks the broker every {@value #EVERY_SECONDS} seconds, since the consumer thread must not
 * wait on the network for it; {@link #figures()} is called by any thread (a metrics thread) and returns the figures
 * published last without waiting.
 */
final class BacklogGauge {

    private static final long EVERY_SECONDS = 2;

    /** A queue's end, as the broker tells it. */
    interface Ends {
        /** @return the offset after the queue's last message; throws when the broker cannot be asked */
        long maxOffset(MessageQueue queue) throws Exception;
    }

    private final ConsumerLoop loop;
    private final Ends ends;
    private final Lifecycle lifecycle;
    private final Thread thread;
    private volatile Map<String, Long> figures = Map.of();

    BacklogGauge(String pipeline, ConsumerLoop loop, Ends ends, Lifecycle lifecycle) {
        this.loop = loop;
        this.ends = ends;
        this.lifecycle = lifecycle;
        this.thread = new Thread(this::run, "idem-rocketmq-backlog-" + pipeline);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void join(long millis) throws InterruptedException {
        thread.interrupt();
        thread.join(millis);
    }

    /** {@code broker-queueId} to messages the broker holds past where the group stands; an unknown one is left out. */
    Map<String, Long> figures() {
        return figures;
    }

    private void run() {
        while (!lifecycle.closing()) {
            refresh();
            try {
                TimeUnit.SECONDS.sleep(EVERY_SECONDS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private void refresh() {
        Map<MessageQueue, Long> positions = loop.positions();
        Map<String, Long> read = new TreeMap<>();
        for (MessageQueue q : loop.assignment()) {
            Long from = positions.get(q);
            if (from == null) {
                long stored = loop.storedOffset(q);
                from = stored >= 0 ? stored : null;
            }
            try {
                long end = ends.maxOffset(q);
                read.put(q.getBrokerName() + "-" + q.getQueueId(), Math.max(0, end - (from == null ? 0 : from)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception unknown) {
                // The broker did not answer: the queue is left out until the next read.
            }
        }
        if (!lifecycle.closing()) {
            figures = Map.copyOf(read);
        }
    }
}
