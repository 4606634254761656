package dev.idem.runtime.internal.pipeline;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * What a pipeline holds between taking a delivery in and settling it, and the one owner of that: the bound on
 * unsettled deliveries ({@code max-in-flight}), the claims held by idempotency key (a copy that comes while one is
 * held follows it) and the dispatched batches the lease keeper watches. The intake admits, tracks and holds;
 * {@link Settlement} gives everything back in {@link #settled}, once per delivery. Thread-safe.
 */
final class InFlight {

    private final InFlightLimit limit;
    private final Map<String, Work> heldKeys = new ConcurrentHashMap<>();
    private final Set<Batch> tracked = ConcurrentHashMap.newKeySet();

    InFlight(int maxInFlight) {
        this.limit = new InFlightLimit(maxInFlight);
    }

    /** Waits for room for {@code n} deliveries (the adapter's thread blocks here while the pipeline is full). */
    void admit(int n) throws InterruptedException {
        limit.acquire(n);
    }

    /** Starts watching a dispatched batch. */
    void track(Batch batch) {
        tracked.add(batch);
    }

    /** Records that this pipeline holds {@code w}'s claim. */
    void hold(Work w) {
        heldKeys.put(w.key, w);
    }

    /** The work of this pipeline holding {@code key}'s claim, or {@code null}. */
    Work holder(String key) {
        return heldKeys.get(key);
    }

    /** Gives back what {@code w} held: its room under the bound, its held key, its share of its batch. */
    void settled(Work w) {
        if (w.counted) {
            limit.release(1);
        }
        if (w.key != null) {
            heldKeys.remove(w.key, w);
        }
        Batch batch = w.batch;
        if (batch != null && batch.finish()) {
            tracked.remove(batch);
        }
    }

    /** Calls {@code action} for every work of a watched batch not yet settled. */
    void forEachUnsettled(Consumer<Work> action) {
        for (Batch batch : tracked) {
            for (Work w : batch.works) {
                if (!w.isSettled()) {
                    action.accept(w);
                }
            }
        }
    }

    /** When the oldest watched batch was dispatched (ticker time), or {@link Long#MAX_VALUE} when none is. */
    long oldestDispatch() {
        long oldest = Long.MAX_VALUE;
        for (Batch b : tracked) {
            oldest = Math.min(oldest, b.dispatchedAt);
        }
        return oldest;
    }

    int count() {
        return limit.inFlight();
    }

    /** Waits until nothing is in flight or the deadline (System.nanoTime) passes; true if drained. */
    boolean awaitDrained(long deadlineNanos) throws InterruptedException {
        return limit.awaitDrained(deadlineNanos);
    }
}
