package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.ConfigKey;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs periodically, on the runtime's lease-keeper thread: renews the claims this pipeline holds once a third of
 * the lease has passed, whether the work runs, waits in its key's queue or is parked for a retry; and interrupts
 * handler runs past their timeout. Time is read from the pipeline's ticker.
 */
final class LeaseKeeper implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

    private final PipelineState s;
    private final InFlight inFlight;
    private final StoreCalls store;
    private final long renewAfterNanos;

    LeaseKeeper(PipelineState state, InFlight inFlight, StoreCalls store) {
        this.s = state;
        this.inFlight = inFlight;
        this.store = store;
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
        inFlight.forEachUnsettled(w -> keep(w, now));
    }

    private void keep(Work w, long now) {
        try {
            if (w.run.interruptIfOverdue(now)) {
                log.warn("Pipeline '{}': {} ran past its handler-timeout of {}; interrupted", s.name,
                        w.describe(), ConfigKey.formatDuration(s.config.handlerTimeout()));
            }
            Claim claim = w.claim;
            if (claim.held() && !claim.leaseLost() && !w.run.inTransaction
                    && now - claim.leaseRenewedAtNanos() >= renewAfterNanos) {
                renew(w, now);
            }
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': lease upkeep of {} failed", s.name, w.describe(), e);
        }
    }

    private void renew(Work w, long now) {
        switch (store.renew(w)) {
            case RENEWED -> w.claim.renewed(now);
            case TAKEN_OVER -> {
                if (w.claim.held()) {
                    w.claim.leaseTakenOver();
                    log.warn("Pipeline '{}': the lease of {} was taken over by another consumer", s.name,
                            w.describe());
                }
            }
            default -> {
                // Logged by the store calls; the next round tries again.
            }
        }
    }
}
