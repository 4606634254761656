package dev.idem.runtime.pipeline;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.StoreException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs periodically: renews the claims this pipeline holds once a third of the lease has passed,
 * whether the work runs, waits in its key's queue or is parked for a retry; and interrupts handler
 * runs past their timeout. Time is read from the pipeline's ticker.
 */
final class LeaseKeeper implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

    private final PipelineState s;
    private final long renewAfterNanos;

    LeaseKeeper(PipelineState state) {
        this.s = state;
        this.renewAfterNanos = state.config.lease().toNanos() / 3;
    }

    /** How often to run: often enough for the lease and the handler timeout, within 5 ms and 1 s. */
    long periodNanos() {
        long lease = s.config.lease().toNanos();
        long timeout = s.config.handlerTimeout().toNanos();
        return Math.max(TimeUnit.MILLISECONDS.toNanos(5),
                Math.min(TimeUnit.SECONDS.toNanos(1), Math.min(lease / 6, timeout / 4)));
    }

    @Override
    public void run() {
        long now = s.now();
        for (Batch batch : s.tracked) {
            for (Work w : batch.works) {
                if (!w.isSettled()) {
                    keep(w, now);
                }
            }
        }
    }

    private void keep(Work w, long now) {
        try {
            if (w.interruptIfOverdue(now)) {
                log.warn("Pipeline '{}': {} ran past its handler-timeout of {}; interrupted", s.name,
                        w.describe(), ConfigKey.formatDuration(s.config.handlerTimeout()));
            }
            if (w.claimed && !w.leaseLost && !w.inTransaction && now - w.leaseRenewedAtNanos >= renewAfterNanos) {
                renew(w, now);
            }
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': lease upkeep of {} failed", s.name, w.describe(), e);
        }
    }

    private void renew(Work w, long now) {
        long start = System.nanoTime();
        try {
            if (s.store.renew(w.storeKey, w.token, s.config.lease())) {
                w.leaseRenewedAtNanos = now;
            } else if (w.claimed) {
                w.leaseLost = true;
                log.warn("Pipeline '{}': the lease of {} was taken over by another consumer", s.name,
                        w.describe());
            }
        } catch (StoreException e) {
            log.warn("Pipeline '{}': could not renew the lease of {} ({}); retrying", s.name, w.describe(),
                    e.getMessage());
        } finally {
            s.metrics.renew.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
    }
}
