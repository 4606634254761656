package dev.idem.runtime.internal.outbox;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.StoreException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes what transactional handlers wrote to the store's outbox, then deletes it: one thread per runtime,
 * woken when a local transaction with emitted messages commits and polling every {@link #POLL} otherwise, so
 * rows written by a process that died are relayed by the survivors. Rows are taken with the store's row locks
 * skipped ({@link OutboxStore#relay}), so every process of a deployment relays at once without publishing a
 * row twice, unless one dies between publishing and deleting: at least once, and the deterministic IDs let
 * the consumer drop the copy.
 *
 * <p>Meters: {@code idem.outbox.relayed} (rows published), {@code idem.outbox.backlog} (rows waiting) and
 * {@code idem.outbox.oldest.age} (seconds since the oldest waiting row was written), refreshed every
 * {@link #BACKLOG_EVERY}. Thread-safe.
 */
public final class OutboxRelay implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(OutboxRelay.class);

    static final Duration POLL = Duration.ofMillis(500);
    static final Duration BACKLOG_EVERY = Duration.ofSeconds(1);
    private static final Duration BACKOFF_MAX = Duration.ofSeconds(5);
    static final int BATCH = 200;

    private final OutboxStore store;
    private final BrokerAdapter broker;
    private final Counter relayed;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final Thread thread;
    private boolean woken;
    private volatile boolean closed;
    private volatile long backlogRows;
    private volatile Instant oldest;
    private long backlogReadAt;

    public OutboxRelay(OutboxStore store, BrokerAdapter broker, MeterRegistry meters) {
        this.store = store;
        this.broker = broker;
        this.relayed = Counter.builder("idem.outbox.relayed").description("Outbox rows published and deleted")
                .register(meters);
        Gauge.builder("idem.outbox.backlog", this, r -> r.backlogRows).description("Outbox rows waiting")
                .register(meters);
        Gauge.builder("idem.outbox.oldest.age", this, OutboxRelay::oldestAgeSeconds)
                .description("Seconds since the oldest waiting outbox row was written").baseUnit("seconds")
                .register(meters);
        this.thread = new Thread(this::loop, "idem-outbox-relay");
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    /** A local transaction wrote to the outbox and committed: relay now rather than at the next poll. */
    public void wake() {
        lock.lock();
        try {
            woken = true;
            wake.signal();
        } finally {
            lock.unlock();
        }
    }

    private double oldestAgeSeconds() {
        Instant o = oldest;
        return o == null ? 0 : Math.max(0, Duration.between(o, Instant.now()).toMillis() / 1000.0);
    }

    private void loop() {
        Duration backoff = Duration.ZERO;
        while (!closed) {
            int n;
            try {
                n = store.relay(BATCH, r -> broker.publish(r.destination(), r.message()));
                relayed.increment(n);
                backoff = Duration.ZERO;
                refreshBacklog(n > 0);
            } catch (RuntimeException e) {
                backoff = backoff.isZero() ? Duration.ofMillis(100) : min(backoff.multipliedBy(2), BACKOFF_MAX);
                String what = e instanceof StoreException ? "the store" : "the broker";
                log.warn("Outbox relay: {} failed ({}); rows stay in the outbox, retrying in {} ms", what,
                        e.getMessage(), backoff.toMillis());
                pause(backoff);
                continue;
            }
            if (n < BATCH) {
                pause(POLL);
            }
        }
    }

    private void refreshBacklog(boolean force) {
        long now = System.nanoTime();
        if (!force && now - backlogReadAt < BACKLOG_EVERY.toNanos()) {
            return;
        }
        backlogReadAt = now;
        try {
            OutboxStore.Backlog b = store.backlog();
            backlogRows = b.rows();
            oldest = b.oldest();
        } catch (RuntimeException e) {
            log.debug("Outbox relay: could not read the backlog ({})", e.getMessage());
        }
    }

    private void pause(Duration d) {
        lock.lock();
        try {
            long left = d.toNanos();
            while (!woken && !closed && left > 0) {
                left = wake.awaitNanos(left);
            }
            woken = false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closed = true;
        } finally {
            lock.unlock();
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** Stops after the batch in progress; waits for it up to {@code timeout}. */
    public void close(Duration timeout) {
        closed = true;
        wake();
        try {
            thread.join(Math.max(1, timeout.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            log.warn("Outbox relay still publishing after {} ms; leaving it (its rows stay locked until its"
                    + " transaction ends)", timeout.toMillis());
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(10));
    }
}
