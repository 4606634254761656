package dev.idem.adapter.kafka;

import dev.idem.adapter.kafka.KafkaDelivery.Settle;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * One pipeline's consumer: a thread that owns the {@link KafkaConsumer}, polls, prepares batches, applies
 * the settles queued by {@link KafkaDelivery} and commits contiguous finished offsets; and a dispatcher
 * thread that hands the prepared batches to the listener in order.
 *
 * <p>Back-pressure: fetched records wait in a buffer until the pipeline has room ({@code maxInFlight} minus
 * the deliveries not yet settled) for a batch of a quarter of {@code maxInFlight} or all that wait; once a
 * poll's worth ({@code max.poll.records}) waits, every assigned partition is paused and the thread keeps
 * polling without fetching, so the consumer stays in its group and rebalances are served however slowly
 * the pipeline drains. The listener is therefore called only with a batch it has room for, and does not block
 * for long; and even while it does, the consumer thread keeps polling. A partition holding many finished
 * offsets behind an unfinished one is paused too, which bounds the memory and the redelivery after a crash.
 *
 * <p>{@link #stop()} and {@link #close()} may be called from any thread.
 */
final class KafkaSubscription implements Subscription, ConsumerRebalanceListener {

    private static final System.Logger log = System.getLogger(KafkaSubscription.class.getName());
    /** How long the thread waits for room before polling the consumer again while back-pressured. */
    private static final long ROOM_WAIT_MILLIS = 50;

    private final KafkaSettings settings;
    private final SubscriptionRequest request;
    /** This consumer's {@code group.instance.id}; {@code null} for a dynamic member. */
    private final String groupInstanceId;
    private final String deadLetterTopic;
    private final DeliveryListener listener;
    private final KafkaAdapter adapter;
    private final Consumer<KafkaSubscription> onClosed;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Thread thread;
    private final Thread dispatcher;
    private final int maxInFlight;
    /** The smallest batch worth handing over while records wait: fewer, larger batches for the pipeline. */
    private final int minBatch;
    private final int maxPollRecords;
    private final int maxHeldPerPartition;

    private final BlockingQueue<Settle> settles = new LinkedBlockingQueue<>();
    /** Batches the consumer thread prepared, for the dispatcher thread to hand to the listener. */
    private final BlockingQueue<List<Delivery>> batches = new LinkedBlockingQueue<>();
    private final AtomicInteger unsettled = new AtomicInteger();
    /** Consumer-thread state. */
    private final Map<TopicPartition, PartitionState> partitions = new HashMap<>();
    private final ArrayDeque<Pending> buffer = new ArrayDeque<>();
    private final Set<TopicPartition> paused = new HashSet<>();
    private long nextCommitNanos;

    private volatile boolean stopped;
    private volatile boolean closing;
    private volatile boolean polling;
    private static final long BACKLOG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);
    private long backlogReadAt = System.nanoTime() - BACKLOG_EVERY_NANOS;
    private volatile Map<String, Long> backlog = Map.of();
    /** Set by the consumer thread once another consumer took this one's instance id. */
    private boolean fenced;

    private record Pending(ConsumerRecord<byte[], byte[]> record, PartitionState partition, int epoch) {
    }

    /**
     * @param groupInstanceId the consumer's {@code group.instance.id}, or {@code null} for a dynamic member
     */
    KafkaSubscription(KafkaSettings settings, SubscriptionRequest request, String groupInstanceId,
            String deadLetterTopic, DeliveryListener listener, KafkaAdapter adapter,
            Consumer<KafkaSubscription> onClosed) {
        this.settings = settings;
        this.request = request;
        this.groupInstanceId = groupInstanceId;
        this.deadLetterTopic = deadLetterTopic;
        this.listener = listener;
        this.adapter = adapter;
        this.onClosed = onClosed;
        this.maxInFlight = request.maxInFlight();
        this.minBatch = Math.max(1, maxInFlight / 4);
        this.maxHeldPerPartition = Math.max(10_000, 10 * maxInFlight);
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
        this.dispatcher = new Thread(this::dispatch, "idem-kafka-dispatch-" + request.pipeline());
        this.dispatcher.setDaemon(true);
    }

    void start() {
        try {
            consumer.subscribe(List.of(request.source()), this);
        } catch (KafkaException e) {
            consumer.close(Duration.ZERO);
            throw new BrokerException("Cannot subscribe to topic '" + request.source() + "': " + e.getMessage(),
                    false, e);
        }
        thread.start();
        dispatcher.start();
        if (groupInstanceId != null) {
            log.log(Level.INFO, "Pipeline ''{0}'' consumes ''{1}'' in group ''{2}'' as static member ''{3}''",
                    request.pipeline(), request.source(), settings.groupId(request.pipeline()), groupInstanceId);
        }
    }

    String pipeline() {
        return request.pipeline();
    }

    String groupInstanceId() {
        return groupInstanceId;
    }

    String deadLetterTopic() {
        return deadLetterTopic;
    }

    boolean closed() {
        return closing;
    }

    void produceDeadLetter(ProducerRecord<byte[], byte[]> copy) {
        adapter.send(copy, "dead-letter copy to '" + copy.topic() + "'");
    }

    /** Called once per delivery by the settling thread. */
    void settled(KafkaDelivery delivery, Settle.Kind kind, Duration delay) {
        unsettled.decrementAndGet();
        if (closing || delivery.partition.revoked) {
            return;
        }
        settles.add(new Settle(delivery, kind, delay.toNanos()));
        if (kind == Settle.Kind.RETRY && polling) {
            // A retry must not wait out a long idle poll; the consumer thread tolerates stray wakeups.
            consumer.wakeup();
        }
    }

    @Override
    public void stop() {
        stopped = true;
    }

    @Override
    public void close() {
        stopped = true;
        closing = true;
        consumer.wakeup();
        if (Thread.currentThread() != thread && Thread.currentThread() != dispatcher) {
            try {
                thread.join(settings.revokeTimeout().plusSeconds(30).toMillis());
                dispatcher.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    // ---------------------------------------------------------------- the dispatcher thread

    /**
     * Hands prepared batches to the listener, so that the pipeline's work on a batch (ID extraction, store
     * claims) overlaps with fetching and decoding the next one instead of stalling the consumer. After
     * {@link #stop()}, batches not yet handed over are handed back (retry without delay) instead.
     */
    private void dispatch() {
        while (!closing) {
            List<Delivery> batch;
            try {
                batch = batches.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (batch == null || closing) {
                continue;
            }
            if (stopped) {
                batch.forEach(d -> d.retryLater(Duration.ZERO));
                continue;
            }
            try {
                listener.onDeliveries(batch);
            } catch (RuntimeException e) {
                log.log(Level.ERROR, "The listener of pipeline '" + request.pipeline() + "' threw; its deliveries"
                        + " come back after a restart or rebalance", e);
            }
        }
    }

    // ---------------------------------------------------------------- the consumer thread

    private void run() {
        nextCommitNanos = System.nanoTime() + settings.commitInterval().toNanos();
        try {
            while (!closing) {
                try {
                    loopOnce();
                } catch (WakeupException e) {
                    // a retry or close asked the poll to return early
                } catch (InterruptException e) {
                    if (!closing) {
                        log.log(Level.WARNING, "Kafka consumer of pipeline ''{0}'' was interrupted",
                                request.pipeline());
                    }
                } catch (FencedInstanceIdException e) {
                    fencedOut(e);
                } catch (KafkaException e) {
                    log.log(Level.WARNING, "Kafka consumer of pipeline '" + request.pipeline() + "' failed; retrying"
                            + " in 1s: " + e.getMessage(), e);
                    backOff(1000);
                }
            }
            if (!fenced) {
                drainSettles();
                commitSync(partitions.keySet());
            }
        } catch (RuntimeException | Error e) {
            log.log(Level.ERROR, "Kafka consumer of pipeline '" + request.pipeline() + "' stopped", e);
        } finally {
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log.log(Level.WARNING, "Closing the Kafka consumer of pipeline ''{0}'' failed: {1}",
                        request.pipeline(), e.getMessage());
            }
            for (PartitionState p : partitions.values()) {
                p.revoked = true;
            }
            partitions.clear();
            buffer.clear();
            onClosed.accept(this);
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
        log.log(Level.ERROR, why + " (" + e.getMessage() + ")");
        adapter.fenced(request.pipeline(), why);
        stopped = true;
        closing = true;
    }

    private void loopOnce() {
        drainSettles();
        seekDueRetries();
        if (!stopped) {
            handOver();
        }
        updatePauses();
        maybeCommit();
        if (!buffer.isEmpty() && !stopped) {
            // No room: wait for a settle rather than for records, then serve the group without fetching.
            Settle first = pollSettle(ROOM_WAIT_MILLIS);
            if (first != null) {
                apply(first);
            }
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
            PartitionState p = partitions.get(new TopicPartition(r.topic(), r.partition()));
            if (p != null) {
                buffer.addLast(new Pending(r, p, p.epoch));
            }
        }
        refreshBacklog();
    }

    /**
     * Per partition, the end offset (position plus the lag the last fetch reported) minus where the group stands
     * (the last commit, else the first offset handed over, else the position): read on the consumer's thread at
     * most once a second, published for {@link #backlog()}.
     */
    private void refreshBacklog() {
        long now = System.nanoTime();
        if (now - backlogReadAt < BACKLOG_EVERY_NANOS) {
            return;
        }
        backlogReadAt = now;
        Map<String, Long> figures = new java.util.TreeMap<>();
        for (Map.Entry<TopicPartition, PartitionState> e : partitions.entrySet()) {
            try {
                java.util.OptionalLong lag = consumer.currentLag(e.getKey());
                if (lag.isEmpty()) {
                    continue;
                }
                long position = consumer.position(e.getKey(), Duration.ZERO);
                long from = e.getValue().consumedFrom();
                long end = position + lag.getAsLong();
                figures.put(Integer.toString(e.getKey().partition()), Math.max(0, end - (from >= 0 ? from : position)));
            } catch (RuntimeException unknown) {
                // No position yet (just assigned): the partition is left out until the next read.
            }
        }
        backlog = Map.copyOf(figures);
    }

    @Override
    public Map<String, Long> backlog() {
        return backlog;
    }

    private Duration pollTimeout() {
        long timeout = settings.pollTimeout().toNanos();
        long now = System.nanoTime();
        for (PartitionState p : partitions.values()) {
            if (p.retryPending()) {
                timeout = Math.min(timeout, Math.max(0, p.nanosUntilSeek(now)));
            }
        }
        return Duration.ofNanos(timeout);
    }

    private void handOver() {
        int room = maxInFlight - unsettled.get();
        if (buffer.isEmpty() || room < Math.min(buffer.size(), minBatch)) {
            return;
        }
        List<Delivery> batch = new ArrayList<>(Math.min(room, buffer.size()));
        while (batch.size() < room && !buffer.isEmpty()) {
            Pending next = buffer.pollFirst();
            PartitionState p = next.partition();
            if (p.revoked || next.epoch() != p.epoch) {
                continue;
            }
            PartitionState.Slot slot = p.deliver(next.record().offset());
            if (slot != null) {
                batch.add(new KafkaDelivery(this, next.record(), p, slot));
            }
        }
        if (batch.isEmpty()) {
            return;
        }
        unsettled.addAndGet(batch.size());
        batches.add(batch);
    }

    private void drainSettles() {
        Settle s;
        while ((s = settles.poll()) != null) {
            apply(s);
        }
    }

    private Settle pollSettle(long millis) {
        try {
            return settles.poll(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private void apply(Settle s) {
        KafkaDelivery d = s.delivery();
        PartitionState p = d.partition;
        if (p.revoked || partitions.get(p.partition) != p) {
            return;
        }
        if (s.kind() == Settle.Kind.ACK) {
            p.finish(d.slot);
        } else {
            p.retry(d.slot, d.epoch, System.nanoTime(), s.delayNanos());
        }
    }

    private void seekDueRetries() {
        long now = System.nanoTime();
        for (PartitionState p : partitions.values()) {
            if (p.retryPending() && p.nanosUntilSeek(now) <= 0) {
                consumer.seek(p.partition, p.seekTo());
                p.sought();
            }
        }
    }

    private void updatePauses() {
        boolean all = stopped || buffer.size() >= maxPollRecords;
        Set<TopicPartition> wanted = new HashSet<>();
        for (PartitionState p : partitions.values()) {
            if (all || p.retryPending() || p.held() >= maxHeldPerPartition) {
                wanted.add(p.partition);
            }
        }
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
        Map<TopicPartition, OffsetAndMetadata> offsets = committable(partitions.keySet());
        if (offsets.isEmpty()) {
            return;
        }
        consumer.commitAsync(offsets, (committed, error) -> {
            if (error instanceof RebalanceInProgressException) {
                // expected while a cooperative rebalance runs; the next commit after it succeeds
                log.log(Level.DEBUG, "Commit of pipeline ''{0}'' deferred by a rebalance", request.pipeline());
                return;
            }
            if (error != null) {
                log.log(Level.WARNING, "Committing offsets of pipeline ''{0}'' failed (retried at the next commit):"
                        + " {1}", request.pipeline(), error.getMessage());
                return;
            }
            committed.forEach((tp, o) -> {
                PartitionState p = partitions.get(tp);
                if (p != null) {
                    p.committed(o.offset());
                }
            });
        });
    }

    private Map<TopicPartition, OffsetAndMetadata> committable(Collection<TopicPartition> of) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : of) {
            PartitionState p = partitions.get(tp);
            long offset = p == null ? -1 : p.committable();
            if (offset >= 0) {
                offsets.put(tp, new OffsetAndMetadata(offset));
            }
        }
        return offsets;
    }

    /** Commits the contiguous finished offsets of {@code of}, synchronously; failures are logged. */
    private void commitSync(Collection<TopicPartition> of) {
        Map<TopicPartition, OffsetAndMetadata> offsets = committable(of);
        if (offsets.isEmpty()) {
            return;
        }
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                consumer.commitSync(offsets, Duration.ofSeconds(10));
                offsets.forEach((tp, o) -> partitions.get(tp).committed(o.offset()));
                return;
            } catch (WakeupException e) {
                // a stray wakeup meant for a poll: try once more
            } catch (KafkaException e) {
                log.log(Level.WARNING, "Committing offsets {0} of pipeline ''{1}'' failed: {2}", offsets,
                        request.pipeline(), e.getMessage());
                return;
            }
        }
    }

    // ---------------------------------------------------------------- rebalances (called inside poll)

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
        for (TopicPartition tp : assigned) {
            partitions.computeIfAbsent(tp, PartitionState::new);
        }
        // Once per join and per rebalance (the cooperative protocol calls this even when nothing is added): a
        // rebalance shows in the log, and a static member restarted in time shows none but its own join.
        log.log(Level.INFO, "Pipeline ''{0}'': group ''{1}'' assigned {2}, now owning {3}", request.pipeline(),
                settings.groupId(request.pipeline()), sorted(assigned), sorted(partitions.keySet()));
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
        if (!closing) {
            // On close there is nothing to announce: the run loop committed already, and a static member keeps
            // its partitions in the group (Kafka calls this on close all the same).
            log.log(Level.INFO, "Pipeline ''{0}'' gives up {1} in a rebalance", request.pipeline(), sorted(revoked));
            awaitInFlight(revoked);
        }
        drainSettles();
        commitSync(revoked);
        forget(revoked);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> lost) {
        // Another member may own them already: committing would overwrite its progress.
        if (!lost.isEmpty() && !closing) {
            log.log(Level.WARNING, "Pipeline ''{0}'' lost {1} (its membership expired); their new owner resumes"
                    + " from the last commit", request.pipeline(), sorted(lost));
        }
        forget(lost);
    }

    /** Gives in-flight work of revoked partitions until the revoke timeout to finish. */
    private void awaitInFlight(Collection<TopicPartition> revoked) {
        long deadline = System.nanoTime() + settings.revokeTimeout().toNanos();
        while (inFlight(revoked) > 0 && !closing) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                log.log(Level.INFO, "Pipeline ''{0}'': {1} deliveries of revoked partitions {2} did not finish within"
                        + " {3}; their new owner receives them again", request.pipeline(), inFlight(revoked), revoked,
                        ConfigKey.formatDuration(settings.revokeTimeout()));
                return;
            }
            Settle s = pollSettle(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(left), 100)));
            if (s != null) {
                apply(s);
            }
        }
    }

    private int inFlight(Collection<TopicPartition> of) {
        int n = 0;
        for (TopicPartition tp : of) {
            PartitionState p = partitions.get(tp);
            n += p == null ? 0 : p.inFlight();
        }
        return n;
    }

    private void forget(Collection<TopicPartition> gone) {
        for (TopicPartition tp : gone) {
            PartitionState p = partitions.remove(tp);
            if (p != null) {
                p.revoked = true;
            }
            paused.remove(tp);
        }
        buffer.removeIf(pending -> pending.partition().revoked);
    }

    /** Waits after a consumer failure, still applying settles so that deliveries do not pile up. */
    private void backOff(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!closing && System.nanoTime() - deadline < 0) {
            Settle s = pollSettle(50);
            if (s != null) {
                apply(s);
            }
        }
    }
}
