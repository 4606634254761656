package dev.idem.store.jdbc;

import dev.idem.spi.StoreException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes forgotten rows so that the table does not grow with every key ever seen (and, after the keys, the
 * forgotten sequence watermarks, so that their table does not grow with every aggregate ever seen, the forgotten
 * durable steps and the forgotten replies). Each run deletes
 * in batches of a bounded size, each its own short statement, until a batch comes back short; so a
 * backlog is worked off without one long transaction holding locks or bloating the log. Runs on one
 * daemon thread, at a fixed delay; a failed run is logged and the next one tries again.
 */
final class Purger implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Purger.class);

    /** What one run did. */
    record Run(long rows, int batches) {
    }

    private final Jdbi jdbi;
    private final Dialect dialect;
    private final int batchSize;
    private final Failures failures;
    private final ScheduledExecutorService executor;
    private volatile boolean stopped;

    Purger(Jdbi jdbi, Dialect dialect, int batchSize, Failures failures) {
        this.jdbi = jdbi;
        this.dialect = dialect;
        this.batchSize = batchSize;
        this.failures = failures;
        this.executor = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "idem-store-jdbc-purge");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Purges every {@code interval}, the first time one interval from now; zero purges never. */
    void start(Duration interval) {
        if (interval.isZero()) {
            return;
        }
        long millis = interval.toMillis();
        executor.scheduleWithFixedDelay(this::runLogged, millis, millis, TimeUnit.MILLISECONDS);
    }

    /**
     * Deletes expired rows, batch by batch, until none is left or the purger is closed.
     *
     * @throws StoreException when a batch fails
     */
    Run purgeExpired() {
        return purge(dialect.purge(), "purging expired keys");
    }

    /**
     * Deletes forgotten sequence watermarks ({@link WatermarkTable}), batch by batch, as {@link #purgeExpired} does
     * keys.
     *
     * @throws StoreException when a batch fails
     */
    Run purgeExpiredWatermarks() {
        return purge(WatermarkTable.of(dialect).purge(), "purging forgotten sequence watermarks");
    }

    /**
     * Deletes forgotten durable steps ({@link StepTable}), batch by batch, as {@link #purgeExpired} does keys.
     *
     * @throws StoreException when a batch fails
     */
    Run purgeExpiredSteps() {
        return purge(StepTable.of(dialect).purge(), "purging forgotten steps");
    }

    /**
     * Deletes forgotten replies ({@link ReplyTable}), batch by batch, as {@link #purgeExpired} does keys.
     *
     * @throws StoreException when a batch fails
     */
    Run purgeExpiredReplies() {
        return purge(ReplyTable.of(dialect).purge(), "purging forgotten replies");
    }

    private Run purge(String sql, String operation) {
        long rows = 0;
        int batches = 0;
        while (!stopped) {
            int deleted;
            try {
                deleted = jdbi.withHandle(handle -> handle.createUpdate(sql).bind(0, batchSize).execute());
            } catch (RuntimeException e) {
                throw failures.of(operation, e);
            }
            rows += deleted;
            batches++;
            if (deleted < batchSize) {
                break;
            }
        }
        return new Run(rows, batches);
    }

    private void runLogged() {
        try {
            Run run = purgeExpired();
            if (run.rows() > 0) {
                log.debug("{}: purged {} expired keys in {} batches", failures.where(), run.rows(), run.batches());
            }
            Run watermarks = purgeExpiredWatermarks();
            if (watermarks.rows() > 0) {
                log.debug("{}: purged {} forgotten sequence watermarks in {} batches", failures.where(),
                        watermarks.rows(), watermarks.batches());
            }
            Run steps = purgeExpiredSteps();
            if (steps.rows() > 0) {
                log.debug("{}: purged {} forgotten steps in {} batches", failures.where(), steps.rows(),
                        steps.batches());
            }
            Run replies = purgeExpiredReplies();
            if (replies.rows() > 0) {
                log.debug("{}: purged {} forgotten replies in {} batches", failures.where(), replies.rows(),
                        replies.batches());
            }
        } catch (RuntimeException e) {
            // The next run tries again; claims are unaffected, since an expired row counts as absent.
            log.warn(e.getMessage(), e);
        }
    }

    boolean isStopped() {
        return executor.isTerminated();
    }

    /**
     * Stops purging, waiting briefly for a running batch to end. The purge thread is never interrupted: on an H2
     * file an interrupt inside the store's I/O would close the database for every other session, and on any
     * database a batch ends on its own, since a run stops between batches once {@code stopped} is set.
     */
    @Override
    public void close() {
        stopped = true;
        executor.shutdown();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
