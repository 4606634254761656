package dev.idem.testkit.memory;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * A broker in memory, with the at-least-once behaviour of a real one: queues with competing
 * consumers, per-delivery ack, delayed redelivery, dead-letter queues, and redelivery of everything
 * a consumer held unsettled when it died. Test support, not a shipped plugin.
 *
 * <p>Thread-safe. Time for delayed redelivery comes from the given ticker, so a test with a manual
 * ticker controls when deferred messages come back. A settle call on a delivery whose subscription
 * was closed or {@linkplain #crashConsumers() crashed} is ignored, as a real broker ignores acks on a
 * dead channel.
 */
public final class InMemoryBroker implements BrokerAdapter, DeadLetterBrowser {

    /** Header names set on dead-lettered copies. */
    public static final String DEAD_LETTER_CAUSE = DeadLetterReason.HEADER_CAUSE;
    public static final String DEAD_LETTER_DETAIL = DeadLetterReason.HEADER_DETAIL;
    public static final String ATTEMPTS = DeadLetterReason.HEADER_ATTEMPTS;
    public static final String PIPELINE = DeadLetterReason.HEADER_PIPELINE;

    private final LongSupplier ticker;
    private final int maxBatch;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, Queue> queues = new HashMap<>();
    private final Set<MemorySubscription> subscriptions = ConcurrentHashMap.newKeySet();
    private final AtomicLong ids = new AtomicLong();
    private volatile boolean closed;

    /** A broker using the system ticker, handing over batches of up to 100. */
    public InMemoryBroker() {
        this(System::nanoTime, 100);
    }

    /**
     * @param ticker nanosecond time source for redelivery delays
     * @param maxBatch the largest batch handed to a listener at once
     */
    public InMemoryBroker(LongSupplier ticker, int maxBatch) {
        this.ticker = ticker;
        this.maxBatch = maxBatch;
    }

    private static final class Stored {
        final String id;
        final String key;
        final Map<String, String> headers;
        final byte[] payload;
        /** Where a request asks its reply to go, or {@code null}. */
        final ReplyAddress replyTo;
        int deliveries;
        long availableAt;

        Stored(String id, String key, Map<String, String> headers, byte[] payload) {
            this(id, key, headers, payload, null);
        }

        Stored(String id, String key, Map<String, String> headers, byte[] payload, ReplyAddress replyTo) {
            this.id = id;
            this.key = key;
            this.headers = headers;
            this.payload = payload;
            this.replyTo = replyTo;
        }
    }

    private static final class Queue {
        final ArrayDeque<Stored> ready = new ArrayDeque<>();
        final List<Stored> delayed = new ArrayList<>();
        int unsettled;
    }

    private Queue queue(String name) {
        return queues.computeIfAbsent(name, n -> new Queue());
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        if (closed) {
            throw new BrokerException("The in-memory broker is closed", false);
        }
        String id = message.messageId() != null ? message.messageId() : "mem-" + ids.incrementAndGet();
        enqueue(destination, new Stored(id, message.key(), message.headers(), message.payload()));
    }

    /**
     * Publishes a request: {@code message} with a reply address, as an AMQP {@code reply_to} or a JMS
     * {@code JMSReplyTo} would carry it. A reply published to that destination keeps the correlation ID in its
     * {@link ReplyAddress#CORRELATION_ID_HEADER} header (Base64), where a real adapter sets the broker's own field.
     */
    public void publishRequest(String destination, OutboundMessage message, ReplyAddress replyTo) {
        if (closed) {
            throw new BrokerException("The in-memory broker is closed", false);
        }
        String id = message.messageId() != null ? message.messageId() : "mem-" + ids.incrementAndGet();
        enqueue(destination, new Stored(id, message.key(), message.headers(), message.payload(), replyTo));
    }

    private void enqueue(String destination, Stored stored) {
        lock.lock();
        try {
            queue(destination).ready.addLast(stored);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Messages waiting in {@code destination} (ready or delayed), not counting those held by consumers. */
    public int depth(String destination) {
        lock.lock();
        try {
            Queue q = queues.get(destination);
            return q == null ? 0 : q.ready.size() + q.delayed.size();
        } finally {
            lock.unlock();
        }
    }

    /** Messages handed to consumers and not yet settled, in {@code destination}. */
    public int unsettled(String destination) {
        lock.lock();
        try {
            Queue q = queues.get(destination);
            return q == null ? 0 : q.unsettled;
        } finally {
            lock.unlock();
        }
    }

    /** Removes and returns every message waiting in {@code destination} (to inspect a dead-letter queue). */
    public List<InboundMessage> drain(String destination) {
        lock.lock();
        try {
            Queue q = queue(destination);
            List<InboundMessage> out = new ArrayList<>();
            for (Stored s : q.ready) {
                out.add(toInbound(destination, s));
            }
            for (Stored s : q.delayed) {
                out.add(toInbound(destination, s));
            }
            q.ready.clear();
            q.delayed.clear();
            return out;
        } finally {
            lock.unlock();
        }
    }

    /** The messages waiting in {@code destination}, ready ones first in their order; the position is the message's ID. */
    @Override
    public List<BrowsedMessage> browse(String destination, String reader, int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        lock.lock();
        try {
            Queue q = queues.get(destination);
            List<BrowsedMessage> out = new ArrayList<>();
            if (q == null) {
                return out;
            }
            List<Stored> all = new ArrayList<>(q.ready);
            all.addAll(q.delayed);
            for (Stored stored : all) {
                if (out.size() >= Math.min(max, MAX_PAGE)) {
                    break;
                }
                out.add(new BrowsedMessage(stored.id, toInbound(destination, stored)));
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Simulates every consumer dying at once without settling anything: their subscriptions stop,
     * everything they held goes back to its queue as redelivered, and their late settle calls are ignored.
     */
    public void crashConsumers() {
        for (MemorySubscription s : List.copyOf(subscriptions)) {
            s.close();
        }
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        if (closed) {
            throw new BrokerException("The in-memory broker is closed", false);
        }
        MemorySubscription s = new MemorySubscription(request, listener);
        subscriptions.add(s);
        s.thread.start();
        return s;
    }

    @Override
    public void close() {
        closed = true;
        crashConsumers();
    }

    /**
     * A separate client connection to this broker: closing it kills only its own subscriptions, as a
     * consumer process that exits. Use it where a test needs a consumer to restart or die.
     */
    public BrokerAdapter connect() {
        return new Connection();
    }

    private final class Connection implements BrokerAdapter, DeadLetterBrowser {
        private final Set<Subscription> own = ConcurrentHashMap.newKeySet();
        private volatile boolean connectionClosed;

        @Override
        public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
            if (connectionClosed) {
                throw new BrokerException("This in-memory broker connection is closed", false);
            }
            Subscription s = InMemoryBroker.this.subscribe(request, listener);
            own.add(s);
            return s;
        }

        @Override
        public void publish(String destination, OutboundMessage message) {
            if (connectionClosed) {
                throw new BrokerException("This in-memory broker connection is closed", false);
            }
            InMemoryBroker.this.publish(destination, message);
        }

        @Override
        public List<BrowsedMessage> browse(String destination, String reader, int max) {
            if (connectionClosed) {
                throw new BrokerException("This in-memory broker connection is closed", false);
            }
            return InMemoryBroker.this.browse(destination, reader, max);
        }

        @Override
        public void close() {
            connectionClosed = true;
            for (Subscription s : own) {
                s.close();
            }
        }
    }

    private InboundMessage toInbound(String source, Stored s) {
        return new InboundMessage(source, null, s.key, s.headers, s.payload, s.id, s.deliveries > 1, s.deliveries,
                s.key, s.replyTo);
    }

    private final class MemorySubscription implements Subscription {
        final SubscriptionRequest request;
        final DeliveryListener listener;
        final Thread thread;
        final Map<MemoryDelivery, Boolean> held = new LinkedHashMap<>();
        volatile boolean stopped;
        volatile boolean dead;

        MemorySubscription(SubscriptionRequest request, DeliveryListener listener) {
            this.request = request;
            this.listener = listener;
            this.thread = new Thread(this::dispatch, "memory-broker-" + request.pipeline());
            this.thread.setDaemon(true);
        }

        private void dispatch() {
            while (!stopped) {
                List<Delivery> batch = nextBatch();
                if (batch == null) {
                    return;
                }
                listener.onDeliveries(batch);
            }
        }

        private List<Delivery> nextBatch() {
            lock.lock();
            try {
                while (!stopped) {
                    Queue q = queue(request.source());
                    promoteDue(q);
                    int room = Math.min(maxBatch, request.maxInFlight() - held.size());
                    if (room > 0 && !q.ready.isEmpty()) {
                        List<Delivery> batch = new ArrayList<>(Math.min(room, q.ready.size()));
                        while (batch.size() < room && !q.ready.isEmpty()) {
                            Stored s = q.ready.pollFirst();
                            s.deliveries++;
                            q.unsettled++;
                            MemoryDelivery d = new MemoryDelivery(this, s, toInbound(request.source(), s));
                            held.put(d, Boolean.TRUE);
                            batch.add(d);
                        }
                        return batch;
                    }
                    // Delayed messages come due by the ticker, which a test may move: poll it.
                    changed.await(q.delayed.isEmpty() ? 50 : 2, TimeUnit.MILLISECONDS);
                }
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } finally {
                lock.unlock();
            }
        }

        private void promoteDue(Queue q) {
            if (q.delayed.isEmpty()) {
                return;
            }
            long now = ticker.getAsLong();
            for (var it = q.delayed.iterator(); it.hasNext(); ) {
                Stored s = it.next();
                if (now - s.availableAt >= 0) {
                    it.remove();
                    q.ready.addLast(s);
                }
            }
        }

        /** The messages of the source not yet handed over, ready or delayed. */
        @Override
        public Map<String, Long> backlog() {
            return Map.of(request.source(), (long) depth(request.source()));
        }

        @Override
        public void stop() {
            stopped = true;
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void close() {
            stop();
            lock.lock();
            try {
                if (dead) {
                    return;
                }
                dead = true;
                Queue q = queue(request.source());
                for (MemoryDelivery d : held.keySet()) {
                    q.unsettled--;
                    q.ready.addLast(d.stored);
                }
                held.clear();
                changed.signalAll();
            } finally {
                lock.unlock();
                subscriptions.remove(this);
            }
        }

        /** Runs a settle action if the delivery is still held by a live subscription; false if ignored. */
        boolean settle(MemoryDelivery d, Runnable action) {
            lock.lock();
            try {
                if (dead || held.remove(d) == null) {
                    return false;
                }
                queue(request.source()).unsettled--;
                action.run();
                changed.signalAll();
                return true;
            } finally {
                lock.unlock();
            }
        }
    }

    private final class MemoryDelivery implements Delivery {
        final MemorySubscription owner;
        final Stored stored;
        final InboundMessage message;

        MemoryDelivery(MemorySubscription owner, Stored stored, InboundMessage message) {
            this.owner = owner;
            this.stored = stored;
            this.message = message;
        }

        @Override
        public InboundMessage message() {
            return message;
        }

        @Override
        public void ack() {
            owner.settle(this, () -> { });
        }

        @Override
        public void retryLater(Duration delay) {
            owner.settle(this, () -> {
                Queue q = queue(owner.request.source());
                if (delay.isZero() || delay.isNegative()) {
                    q.ready.addLast(stored);
                } else {
                    stored.availableAt = ticker.getAsLong() + delay.toNanos();
                    q.delayed.add(stored);
                }
            });
        }

        @Override
        public void deadLetter(DeadLetterReason reason) {
            String destination = owner.request.deadLetterDestination() != null
                    ? owner.request.deadLetterDestination() : owner.request.source() + ".DLQ";
            owner.settle(this, () -> {
                Map<String, String> headers = new LinkedHashMap<>(stored.headers);
                headers.putAll(reason.toHeaders());
                headers.put(DeadLetterReason.ORIGIN_SOURCE, owner.request.source());
                queue(destination).ready.addLast(new Stored(stored.id, stored.key, Map.copyOf(headers), stored.payload,
                        stored.replyTo));
            });
        }
    }
}
