package dev.idem.runtime.internal.pipeline;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The works of one dispatched batch, as the lease keeper sees them. Tracking per batch rather than
 * per message keeps the hot path to one shared-set insert and one removal per batch.
 */
final class Batch {

    final Work[] works;
    /** When it was dispatched, on the pipeline's ticker: the in-flight age gauge reads it. */
    final long dispatchedAt;
    private final AtomicInteger open;

    Batch(List<Work> works, long dispatchedAt) {
        this.works = works.toArray(new Work[0]);
        this.dispatchedAt = dispatchedAt;
        this.open = new AtomicInteger(this.works.length);
        for (Work w : this.works) {
            w.batch = this;
        }
    }

    /** Counts one work as finished; true when it was the last. */
    boolean finish() {
        return open.decrementAndGet() == 0;
    }
}
