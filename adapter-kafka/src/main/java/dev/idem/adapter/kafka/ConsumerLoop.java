package dev.idem.adapter.kafka;

import dev.idem.adapter.kafka.KafkaDelivery.Settle;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.Delivery;
import dev.idem.spi.SubscriptionRequest;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer thread of one subscription, the only thread that touches its {@link KafkaConsumer} (which is not
 * thread-safe): it polls, buffers the fetched records in the {@link FetchBuffer} and passes the batches cut from
 * them to the {@link Dispatcher}, applies the settles of the {@link SettleQueue} to the {@link OffsetTracker}, seeks
 * partitions back for retries, pauses and resumes partitions, commits the contiguous finished offsets, serves
 * rebalances and refreshes the {@link BacklogGauge}.
 *
 * <p>Back-pressure: fetched records wait in the buffer until the pipeline has room ({@code maxInFlight} minus the
 * deliveries not yet settled) for a batch of a quarter of {@code maxInFlight} or all that wait; once a poll's worth
 * ({@code max.poll.records}) waits, every assigned partition is paused and the thread keeps polling without
 * fetching, so the consumer stays in its group and rebalances are served however slowly the pipeline drains. The
 * listener is therefore called only with a batch it has room for, and does not block for long; and even while it
 * does, the consumer thread keeps polling. A partition holding many finished offsets behind an unfinished one is
 * paused too, which bounds the memory and the redelivery after a crash.
 *
 * <p>Threads: the rebalance callbacks run on the consumer thread, inside {@code poll} and {@code close}. The
 * subscribing thread calls {@link #start()} before the consumer thread runs; {@link #wakeup()},
 * {@link #wakeupIfPolling()}, {@link #runsOnCurrentThread()}, {@link #join} and {@link #backlog()} may be called from
 * any thread.
 */
final class ConsumerLoop implements ConsumerRebalanceListener {

    private static final Logger log = LoggerFactory.getLogger(ConsumerLoop.class);
    /** How long the thread waits for room before polling the consumer again while back-pressured. */
    private static final long ROOM_WAIT_MILLIS = 50;

    private final KafkaSettings settings;
    private final SubscriptionRequest request;
    /** This consumer's {@code group.instance.id}; {@code null} for a dynamic member. */
    private final String groupInstanceId;
    private final KafkaAdapter adapter;
    private final Lifecycle lifecycle;
    private final SettleQueue settles;
    private final OffsetTracker tracker;
    private final FetchBuffer buffer;
    private final Dispatcher dispatcher;
    private final Runnable onClosed;
    private final BacklogGauge backlog = new BacklogGauge();
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Thread thread;
    private final int maxInFlight;
    private final int maxPollRecords;

    /** Consumer-thread state. */
    private final Set<TopicPartition> paused = new HashSet<>();
    private long nextCommitNanos;
    /** Set by the consumer thread once another consumer took this one's instance id. */
    private boolean fenced;

    private volatile boolean polling;

    /**
     * @param groupInstanceId the consumer's {@code group.instance.id}, or {@code null} for a dynamic member
     * @param onClosed run on the consumer thread once the consumer is closed
     * @throws BrokerException if kafka-clients rejects the consumer's settings
     */
    ConsumerLoop(KafkaSettings settings, SubscriptionRequest request, String groupInstanceId, KafkaAdapter adapter,
            Lifecycle lifecycle, SettleQueue settles, OffsetTracker tracker, FetchBuffer buffer, Dispatcher dispatcher,
            Runnable onClosed) {
        this.settings = settings;
        this.request = request;
        this.groupInstanceId = groupInstanceId;
        this.adapter = adapter;
        this.lifecycle = lifecycle;
        this.settles = settles;
        this.tracker = tracker;
        this.buffer = buffer;
        this.dispatcher = dispatcher;
        this.onClosed = onClosed;
        this.maxInFlight = request.maxInFlight();
        Map<String, Object> config = settings.consumer(request.pipeline(), request.maxInFlight(), groupInstanceId);
        this.maxPollRecords = Integer.parseInt(String.valueOf(config.get(ConsumerConfig.MAX_POLL_RECORDS_CONFIG)));
        try {
            this.consumer = new KafkaConsumer<>(config);
        } catch (KafkaException e) {
            throw new BrokerException("Cannot create the Kafka consumer for pipeline '" + request.pipeline() + "': "
                    + e.getMessage() + " (check " + settings.path() + ".client and the security settings)", false, e);
        }
        this.thread = new Thread(this::run, "idem-kafka-" + request.pipeline());
        this.thread.setDaemon(true);
    }

    /**
     * Subscribes to the source and starts the consumer thread.
     *
     * @throws BrokerException if Kafka refuses the subscription; the consumer is closed then
     */
    void start() {
        try {
            consumer.subscribe(List.of(request.source()), this);
        } catch (KafkaException e) {
            consumer.close(Duration.ZERO);
            throw new BrokerException("Cannot subscribe to topic '" + request.source() + "': " + e.getMessage(),
                    false, e);
        }
        thread.start();
    }

    /** Makes a poll in progress, or the next one, return at once. */
    void wakeup() {
        consumer.wakeup();
    }

    /** Makes a poll in progress return at once; nothing when the thread is not polling. */
    void wakeupIfPolling() {
        if (polling) {
            consumer.wakeup();
        }
    }

    boolean runsOnCurrentThread() {
        return Thread.currentThread() == thread;
    }

    void join(long millis) throws InterruptedException {
        thread.join(millis);
    }

    /** The backlog figures the consumer thread published last. */
    Map<String, Long> backlog() {
        return backlog.figures();
    }

    // ---------------------------------------------------------------- the loop

    private void run() {
        nextCommitNanos = System.nanoTime() + settings.commitInterval().toNanos();
        try {
            while (!lifecycle.closing()) {
                try {
                    loopOnce();
                } catch (WakeupException e) {
                    // a retry or close asked the poll to return early
                } catch (InterruptException e) {
                    if (!lifecycle.closing()) {
                        log.warn("Kafka consumer of pipeline '{}' was interrupted", request.pipeline());
                    }
                } catch (FencedInstanceIdException e) {
                    fencedOut(e);
                } catch (KafkaException e) {
                    log.warn("Kafka consumer of pipeline '{}' failed; retrying in 1s: {}", request.pipeline(),
                            e.getMessage(), e);
                    backOff(1000);
                }
            }
            if (!fenced) {
                drainSettles();
                commitSync(tracker.owned());
            }
        } catch (RuntimeException | Error e) {
            log.error("Kafka consumer of pipeline '{}' stopped", request.pipeline(), e);
        } finally {
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log.warn("Closing the Kafka consumer of pipeline '{}' failed: {}", request.pipeline(), e.getMessage());
            }
            tracker.forgetAll();
            buffer.clear();
            onClosed.run();
        }
    }

    /**
     * Another live consumer joined the group under this consumer's instance id: Kafka fenced this one out for good,
     * and its partitions belong to the other. It stops without committing (the commit would be refused), and the
     * adapter's health check reports why.
     */
    private void fencedOut(FencedInstanceIdException e) {
        fenced = true;
        String why = "The Kafka consumer of pipeline '" + request.pipeline() + "' was fenced out of group '"
                + settings.groupId(request.pipeline()) + "' by another consumer with group.instance.id '"
                + groupInstanceId + "' and stopped consuming: give each process its own "
                + settings.path() + "." + KafkaAdapterProvider.GROUP_INSTANCE_ID.name() + " (e.g. ${HOSTNAME})"
                + " and restart this one";
        log.error("{} ({})", why, e.getMessage());
        adapter.fenced(request.pipeline(), why);
        lifecycle.close();
    }

    private void loopOnce() {
        drainSettles();
        tracker.seekDueRetries(System.nanoTime(), (tp, offset) -> consumer.seek(tp, offset));
        if (!lifecycle.stopped()) {
            handOver();
        }
        updatePauses();
        maybeCommit();
        if (!buffer.isEmpty() && !lifecycle.stopped()) {
            // No room: wait until the next batch fits rather than for records, then serve the group without
            // fetching. Waking for every settle instead cost a loop and a poll per message.
            settles.awaitUnsettledAtMost(maxInFlight - buffer.roomNeeded(), ROOM_WAIT_MILLIS);
            poll(Duration.ZERO);
        } else {
            poll(pollTimeout());
        }
    }

    private void poll(Duration timeout) {
        ConsumerRecords<byte[], byte[]> records;
        polling = true;
        try {
            records = consumer.poll(timeout);
        } finally {
            polling = false;
        }
        for (ConsumerRecord<byte[], byte[]> r : records) {
            PartitionState p = tracker.get(new TopicPartition(r.topic(), r.partition()));
            if (p != null) {
                buffer.add(r, p);
            }
        }
        backlog.refresh(consumer, tracker.states());
    }

    /** The configured poll timeout, shortened to the first seek for a retry that falls due. */
    private Duration pollTimeout() {
        return Duration.ofNanos(tracker.nanosUntilSeek(System.nanoTime(), settings.pollTimeout().toNanos()));
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

    private void updatePauses() {
        boolean all = lifecycle.stopped() || buffer.size() >= maxPollRecords;
        Set<TopicPartition> wanted = all ? new HashSet<>(tracker.owned()) : tracker.mustWait();
        if (wanted.equals(paused)) {
            return;
        }
        Set<TopicPartition> resume = new HashSet<>(paused);
        resume.removeAll(wanted);
        Set<TopicPartition> pause = new HashSet<>(wanted);
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

    private void maybeCommit() {
        long now = System.nanoTime();
        if (now - nextCommitNanos < 0) {
            return;
        }
        nextCommitNanos = now + settings.commitInterval().toNanos();
        Map<TopicPartition, OffsetAndMetadata> offsets = tracker.committable(tracker.owned());
        if (offsets.isEmpty()) {
            return;
        }
        // The callback runs on this thread, inside a later poll or commit.
        consumer.commitAsync(offsets, (committed, error) -> {
            if (error instanceof RebalanceInProgressException) {
                // expected while a cooperative rebalance runs; the next commit after it succeeds
                log.debug("Commit of pipeline '{}' deferred by a rebalance", request.pipeline());
                return;
            }
            if (error != null) {
                log.warn("Committing offsets of pipeline '{}' failed (retried at the next commit): {}",
                        request.pipeline(), error.getMessage());
                return;
            }
            tracker.committed(committed);
        });
    }

    /** Commits the contiguous finished offsets of {@code of}, synchronously; failures are logged. */
    private void commitSync(Collection<TopicPartition> of) {
        Map<TopicPartition, OffsetAndMetadata> offsets = tracker.committable(of);
        if (offsets.isEmpty()) {
            return;
        }
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                consumer.commitSync(offsets, Duration.ofSeconds(10));
                tracker.committed(offsets);
                return;
            } catch (WakeupException e) {
                // a stray wakeup meant for a poll: try once more
            } catch (KafkaException e) {
                log.warn("Committing offsets {} of pipeline '{}' failed: {}", offsets, request.pipeline(),
                        e.getMessage());
                return;
            }
        }
    }

    /** Waits after a consumer failure, still applying settles so that deliveries do not pile up. */
    private void backOff(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!lifecycle.closing() && System.nanoTime() - deadline < 0) {
            applyNextSettle(50);
        }
    }

    // ---------------------------------------------------------------- rebalances (called inside poll and close)

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
        tracker.assigned(assigned);
        // Once per join and per rebalance (the cooperative protocol calls this even when nothing is added): a
        // rebalance shows in the log, and a static member restarted in time shows none but its own join.
        log.info("Pipeline '{}': group '{}' assigned {}, now owning {}", request.pipeline(),
                settings.groupId(request.pipeline()), sorted(assigned), sorted(tracker.owned()));
        // The consumer resumes newly assigned partitions; our pause bookkeeping follows at the next loop.
        paused.removeAll(assigned);
    }

    private static List<String> sorted(Collection<TopicPartition> partitions) {
        return partitions.stream().map(TopicPartition::toString).sorted().toList();
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
        if (revoked.isEmpty()) {
            return;
        }
        if (fenced) {
            // Called by the close; the partitions are the other consumer's, and Kafka would refuse the commit.
            forget(revoked);
            return;
        }
        boolean rebalance = !lifecycle.closing();
        if (rebalance) {
            // On close there is nothing to announce: the run loop committed already, and a static member keeps
            // its partitions in the group (Kafka calls this on close all the same).
            log.info("Pipeline '{}' gives up {} in a rebalance", request.pipeline(), sorted(revoked));
            awaitInFlight(revoked);
        }
        drainSettles();
        List<Delivery> givenUp = rebalance ? tracker.inFlightDeliveries(revoked) : List.of();
        commitSync(revoked);
        forget(revoked);
        // Once forgotten, their settles are no-ops: the pipeline hands back what it holds without running, releasing
        // its claims for the new owner (set aside for a sequence gap, it would hold them until gap-timeout).
        dispatcher.revoked(givenUp);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> lost) {
        // Another member may own them already: committing would overwrite its progress.
        List<Delivery> givenUp = List.of();
        if (!lost.isEmpty() && !lifecycle.closing()) {
            log.warn("Pipeline '{}' lost {} (its membership expired); their new owner resumes from the last commit",
                    request.pipeline(), sorted(lost));
            givenUp = tracker.inFlightDeliveries(lost);
        }
        forget(lost);
        dispatcher.revoked(givenUp);
    }

    /**
     * Gives in-flight work of revoked partitions until the revoke timeout to finish; what is still in flight then is
     * given up ({@link Dispatcher#revoked}).
     */
    private void awaitInFlight(Collection<TopicPartition> revoked) {
        long deadline = System.nanoTime() + settings.revokeTimeout().toNanos();
        while (tracker.inFlight(revoked) > 0 && !lifecycle.closing()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                log.info("Pipeline '{}': {} deliveries of revoked partitions {} did not finish within {}; their new"
                        + " owner receives them again", request.pipeline(), tracker.inFlight(revoked), revoked,
                        ConfigKey.formatDuration(settings.revokeTimeout()));
                return;
            }
            applyNextSettle(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(left), 100)));
        }
    }

    /** Stops tracking partitions this consumer no longer owns, and drops their buffered records. */
    private void forget(Collection<TopicPartition> gone) {
        tracker.forget(gone);
        paused.removeAll(gone);
        buffer.dropRevoked();
    }
}
