package dev.idem.runtime.pipeline;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The works of one dispatched batch, as the lease keeper sees them. Tracking per batch rather than
 * per message keeps the hot path to one shared-set insert and one removal per batch.
 */
final class Batch {

    final Work[] works;
    private final AtomicInteger open;

    Batch(List<Work> works) {
        this.works = works.toArray(new Work[0]);
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
