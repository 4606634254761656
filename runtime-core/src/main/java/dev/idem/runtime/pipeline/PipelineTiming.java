package dev.idem.runtime.pipeline;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Back-off bounds for store outages, shared by the stages. */
final class PipelineTiming {

    static final Duration STORE_BACKOFF_MIN = Duration.ofMillis(50);
    static final Duration STORE_BACKOFF_MAX = Duration.ofSeconds(5);

    private PipelineTiming() {
    }

    /**
     * Sleeps in real time while a store recovers; false if interrupted or {@code abort} turned true.
     * Only store-outage back-off sleeps: a handler retry parks its key on the ticker instead.
     */
    static boolean pause(Duration duration, BooleanSupplier abort) {
        long until = System.nanoTime() + duration.toNanos();
        long left;
        while ((left = until - System.nanoTime()) > 0) {
            if (abort.getAsBoolean() || Thread.currentThread().isInterrupted()) {
                return false;
            }
            LockSupport.parkNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
        }
        return !abort.getAsBoolean();
    }
}
