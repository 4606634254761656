package dev.idem.adapter.rocketmq;

import dev.idem.adapter.rocketmq.RocketMqDelivery.Settle;
import dev.idem.spi.BrokerException;
import dev.idem.spi.Delivery;
import dev.idem.spi.SubscriptionRequest;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer thread of one subscription, the only thread that calls its {@link DefaultLitePullConsumer} (whose
 * {@code poll}, {@code seek} and {@code commit} share one lock, so a second caller would wait out every poll): it
 * polls, buffers the polled messages in the {@link FetchBuffer} and passes the batches cut from them to the
 * {@link Dispatcher}, applies the settles of the {@link SettleQueue} to the {@link QueueTracker}, follows the queues
 * RocketMQ's rebalancing assigns, seeks queues back for retries, pauses and resumes queues, and commits.
 *
 * <p>Commits, in two steps: every loop hands the offsets that moved (after the highest contiguous finished message of
 * each queue) to the client's offset store, in memory; every {@code commit-interval} they are written to the broker
 * (one-way, as the client itself does), and on close synchronously, before the thread ends; the consumer is then
 * shut down in the background ({@link ClientShutdown}). The client writes the offset store's value of a queue when a
 * rebalance takes the queue away or it shuts down, so what was finished is committed then too, and nothing else. The
 * client's own commit methods that take no offsets are never called: they commit what was polled, not what was
 * finished.
 *
 * <p>Back-pressure: polled messages wait in the buffer until the pipeline has room ({@code maxInFlight} minus the
 * deliveries not yet settled) for a batch of a quarter of {@code maxInFlight} or all that wait; once a poll's worth
 * waits, the thread stops polling and waits for settles, and the client stops pulling once it caches
 * {@code maxInFlight} messages. A queue holding many finished offsets behind an unfinished one is paused.
 *
 * <p>Threads: the subscribing thread calls {@link #start()} before the consumer thread runs; {@link #runsOnCurrentThread()},
 * {@link #join}, {@link #positions()} and {@link #assignment()} may be called from any thread.
 */
final class ConsumerLoop {

    private static final Logger log = LoggerFactory.getLogger(ConsumerLoop.class);
    /** How long the thread waits for a settle while messages wait for room. */
    private static final long ROOM_WAIT_MILLIS = 50;
    /** The most polls one loop makes while messages keep coming, before it hands over and applies settles. */
    private static final int MAX_POLLS_PER_LOOP = 64;
    private static final long POSITIONS_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final RocketMqSettings settings;
    private final SubscriptionRequest request;
    private final Source source;
    private final Lifecycle lifecycle;
    private final SettleQueue settles;
    private final QueueTracker tracker;
    private final FetchBuffer buffer;
    private final Dispatcher dispatcher;
    private final Runnable onClosed;
    private final DefaultLitePullConsumer consumer;
    private final Thread thread;
    private final int maxInFlight;
    /** The consumer thread stops polling while this many messages wait for room. */
    private final int bufferLimit;

    /** Consumer-thread state. */
    private final Set<MessageQueue> paused = new HashSet<>();
    private long nextPersistNanos;
    private long nextPositionsNanos;
    /** Offsets handed to the offset store since the last write to the broker. */
    private boolean unpersisted;

    /** For the backlog gauge: where the group stands per owned queue, and the owned queues. */
    private volatile Map<MessageQueue, Long> positions = Map.of();
    private volatile Set<MessageQueue> assignment = Set.of();

    /**
     * @param instanceName the client instance of this subscription's consumer, unique to it
     * @param onClosed run on the consumer thread once the last offsets are committed and the consumer's shutdown began
     */
    ConsumerLoop(RocketMqSettings settings, SubscriptionRequest request, Source source, String instanceName,
            Lifecycle lifecycle, SettleQueue settles, QueueTracker tracker, FetchBuffer buffer, Dispatcher dispatcher,
            Runnable onClosed) {
        this.settings = settings;
        this.request = request;
        this.source = source;
        this.lifecycle = lifecycle;
        this.settles = settles;
        this.tracker = tracker;
        this.buffer = buffer;
        this.dispatcher = dispatcher;
        this.onClosed = onClosed;
        this.maxInFlight = request.maxInFlight();
        this.bufferLimit = Math.max(settings.pullBatchSize(), Math.min(maxInFlight, 2_000));
        this.consumer = settings.consumer(request.pipeline(), maxInFlight, instanceName);
        this.thread = new Thread(this::run, "idem-rocketmq-" + request.pipeline());
        this.thread.setDaemon(true);
    }

    /**
     * Checks that a name server accepts connections, subscribes, starts the consumer (it joins its group) and the
     * consumer thread.
     *
     * @throws BrokerException if no name server can be reached within {@code connect-timeout} (retriable), or if
     *         RocketMQ refuses the group or the subscription; the consumer is shut down then
     */
    void start() {
        try {
            NameServerProbe.awaitReachable(settings);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while connecting to RocketMQ", true, e);
        }
        try {
            consumer.subscribe(source.topic(), source.selector());
            consumer.start();
        } catch (MQClientException | RuntimeException e) {
            consumer.shutdown();
            throw new BrokerException("Cannot consume '" + request.source() + "' in consumer group '"
                    + settings.group(request.pipeline()) + "': " + RocketMqAdapter.describe(e), false, e);
        }
        FirstRebalance.hasten(consumer);
        thread.start();
    }

    boolean runsOnCurrentThread() {
        return Thread.currentThread() == thread;
    }

    void join(long millis) throws InterruptedException {
        thread.join(millis);
    }

    /** Where the group stands per owned queue (the last commit, else the first offset handed over), as last published. */
    Map<MessageQueue, Long> positions() {
        return positions;
    }

    /** The queues owned, as last published. */
    Set<MessageQueue> assignment() {
        return assignment;
    }

    /** The committed offset the client's offset store holds for {@code queue} in memory, or -1. Any thread. */
    long storedOffset(MessageQueue queue) {
        OffsetStore store = consumer.getOffsetStore();
        return store == null ? -1 : store.readOffset(queue, ReadOffsetType.READ_FROM_MEMORY);
    }

    // ---------------------------------------------------------------- the loop

    private void run() {
        nextPersistNanos = System.nanoTime() + settings.commitInterval().toNanos();
        try {
            while (!lifecycle.closing()) {
                try {
                    loopOnce();
                } catch (RuntimeException e) {
                    log.warn("RocketMQ consumer of pipeline '{}' failed; retrying in 1s: {}", request.pipeline(),
                            e.getMessage(), e);
                    backOff(1000);
                }
            }
            drainSettles();
            pushCommits();
            persistSync();
        } catch (RuntimeException | Error e) {
            log.error("RocketMQ consumer of pipeline '{}' stopped", request.pipeline(), e);
        } finally {
            ClientShutdown.inBackground("consumer " + consumer.getInstanceName(), consumer::shutdown);
            tracker.forgetAll();
            buffer.clear();
            assignment = Set.of();
            positions = Map.of();
            onClosed.run();
        }
    }

    private void loopOnce() {
        drainSettles();
        syncAssignment();
        tracker.seekDueRetries(System.nanoTime(), this::seek);
        if (!lifecycle.stopped()) {
            handOver();
        }
        updatePauses();
        pushCommits();
        maybePersist();
        maybePublishPositions();
        if (lifecycle.stopped() || buffer.size() >= bufferLimit) {
            applyNextSettle(ROOM_WAIT_MILLIS);
        } else if (!buffer.isEmpty()) {
            // No room: wait for a settle rather than for messages, then take what the client has cached.
            applyNextSettle(ROOM_WAIT_MILLIS);
            poll(0);
        } else {
            poll(pollTimeoutMillis());
        }
    }

    /** Polls, then takes what else the client has cached, until a poll's worth waits. */
    private void poll(long timeoutMillis) {
        List<MessageExt> polled = consumer.poll(timeoutMillis);
        for (int polls = 1; !polled.isEmpty(); polls++) {
            for (MessageExt m : polled) {
                add(m);
            }
            if (buffer.size() >= bufferLimit || polls >= MAX_POLLS_PER_LOOP) {
                return;
            }
            polled = consumer.poll(0);
        }
    }

    private void add(MessageExt m) {
        MessageQueue mq = new MessageQueue(m.getTopic(), m.getBrokerName(), m.getQueueId());
        QueueState q = tracker.get(mq);
        if (q == null) {
            // Assigned since the last look: the client pulls a queue as soon as a rebalance gives it.
            syncAssignment();
            q = tracker.get(mq);
        }
        if (q != null) {
            buffer.add(m, q);
        }
    }

    /** The configured poll timeout, shortened to the first seek for a retry that falls due. */
    private long pollTimeoutMillis() {
        long nanos = tracker.nanosUntilSeek(System.nanoTime(), settings.pollTimeout().toNanos());
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    /** Hands the next batch to the dispatcher, if the pipeline has room for one. */
    private void handOver() {
        List<Delivery> batch = buffer.takeBatch(maxInFlight - settles.unsettled());
        if (batch.isEmpty()) {
            return;
        }
        settles.handedOver(batch.size());
        dispatcher.dispatch(batch);
    }

    private void drainSettles() {
        Settle s;
        while ((s = settles.poll()) != null) {
            tracker.apply(s);
        }
    }

    /** Applies the next settle, waiting up to {@code millis} for one. */
    private void applyNextSettle(long millis) {
        Settle s = settles.poll(millis);
        if (s != null) {
            tracker.apply(s);
        }
    }

    /** Follows the queues RocketMQ's rebalancing assigned to this consumer since the last look. */
    private void syncAssignment() {
        Set<MessageQueue> now;
        try {
            now = new HashSet<>(consumer.assignment());
        } catch (MQClientException e) {
            return;
        }
        Set<MessageQueue> owned = tracker.owned();
        if (now.equals(owned)) {
            return;
        }
        Set<MessageQueue> gone = new HashSet<>(owned);
        gone.removeAll(now);
        Set<MessageQueue> added = new HashSet<>(now);
        added.removeAll(owned);
        if (!gone.isEmpty()) {
            // The client already wrote the offset store's value of these queues, i.e. what was finished.
            log.info("Pipeline '{}' gives up {} in a rebalance; their new owner receives what was not finished",
                    request.pipeline(), names(gone));
            drainSettles();
            List<Delivery> givenUp = tracker.inFlightDeliveries(gone);
            tracker.forget(gone);
            paused.removeAll(gone);
            buffer.dropRevoked();
            // Once forgotten, their settles are no-ops: the pipeline hands back what it holds without running,
            // releasing its claims for the new owner (set aside for a sequence gap, it would hold them until
            // gap-timeout, while the new owner waits for those claims).
            dispatcher.revoked(givenUp);
        }
        if (!added.isEmpty()) {
            tracker.assigned(added);
            log.info("Pipeline '{}': group '{}' assigned {}, now owning {}", request.pipeline(),
                    settings.group(request.pipeline()), names(added), names(tracker.owned()));
        }
        assignment = Set.copyOf(tracker.owned());
    }

    private static List<String> names(Set<MessageQueue> queues) {
        return queues.stream().map(q -> q.getBrokerName() + "-" + q.getQueueId()).sorted().toList();
    }

    /** Seeks a queue back for a retry; false (tried again later) if the client refused. */
    private boolean seek(QueueState q, long offset) {
        try {
            consumer.seek(q.queue, offset);
            return true;
        } catch (MQClientException | RuntimeException e) {
            log.warn("Pipeline '{}': seeking {} back to offset {} for a retry failed (tried again in 1s): {}",
                    request.pipeline(), q.label, offset, e.getMessage());
            return false;
        }
    }

    private void updatePauses() {
        Set<MessageQueue> wanted = lifecycle.stopped() ? new HashSet<>(tracker.owned()) : tracker.mustWait();
        if (wanted.equals(paused)) {
            return;
        }
        Set<MessageQueue> resume = new HashSet<>(paused);
        resume.removeAll(wanted);
        Set<MessageQueue> pause = new HashSet<>(wanted);
        pause.removeAll(paused);
        if (!resume.isEmpty()) {
            consumer.resume(resume);
        }
        if (!pause.isEmpty()) {
            consumer.pause(pause);
        }
        paused.clear();
        paused.addAll(wanted);
    }

    /** Hands the offsets that moved to the client's offset store (memory only; the client skips queues it gave up). */
    private void pushCommits() {
        Map<MessageQueue, Long> offsets = tracker.committable();
        if (offsets.isEmpty()) {
            return;
        }
        consumer.commit(offsets, false);
        tracker.committed(offsets);
        unpersisted = true;
    }

    /** Every commit interval, writes the offset store's values of the owned queues to the broker (one-way). */
    private void maybePersist() {
        long now = System.nanoTime();
        if (now - nextPersistNanos < 0) {
            return;
        }
        nextPersistNanos = now + settings.commitInterval().toNanos();
        if (!unpersisted || tracker.owned().isEmpty()) {
            return;
        }
        unpersisted = false;
        // Every owned queue: the store forgets the offsets of queues left out.
        consumer.getOffsetStore().persistAll(new HashSet<>(tracker.owned()));
    }

    /** On close: writes the last committed offset of each owned queue to the broker and waits for its answer. */
    private void persistSync() {
        OffsetStore store = consumer.getOffsetStore();
        for (Map.Entry<MessageQueue, Long> e : tracker.lastCommitted().entrySet()) {
            try {
                store.updateConsumeOffsetToBroker(e.getKey(), e.getValue(), false);
            } catch (Exception failure) {
                if (failure instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                log.warn("Committing offset {} of {} for pipeline '{}' failed: {}", e.getValue(), e.getKey(),
                        request.pipeline(), failure.getMessage());
            }
        }
    }

    private void maybePublishPositions() {
        long now = System.nanoTime();
        if (now - nextPositionsNanos < 0) {
            return;
        }
        nextPositionsNanos = now + POSITIONS_EVERY_NANOS;
        positions = Map.copyOf(new HashMap<>(tracker.positions()));
        assignment = Set.copyOf(tracker.owned());
    }

    /** Waits after a consumer failure, still applying settles so that deliveries do not pile up. */
    private void backOff(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!lifecycle.closing() && System.nanoTime() - deadline < 0) {
            applyNextSettle(50);
        }
    }
}
