package dev.idem.runtime.config;

import java.time.Duration;

/**
 * How a pipeline in plain mode writes completions to the store ({@code commit.*}): completions of
 * messages whose handlers finish close together go in one {@code DedupStore.completeAll} call. A batch
 * goes when it holds {@code batchSize} completions, when {@code linger} has passed since its first, or at
 * once when no other handler of the pipeline is running (so no completion could join it); while one batch
 * is written, the next gathers. Up to {@code writers} batches are written at once: one whenever one is due,
 * and a further one, while another is being written, only once it is full. Each message is acked only after
 * its own completion is durable.
 *
 * @param linger the longest a completion waits for others to join its batch; zero sends each batch as
 *        soon as the previous one returned
 * @param batchSize the most completions in one call; 1 completes each key on the worker that ran it
 * @param writers how many batches may be written at once
 */
public record CommitPolicy(Duration linger, int batchSize, int writers) {

    public CommitPolicy {
        writers = Math.max(1, writers);
    }

    /** Whether completions go through the batching committer rather than one call per key on the worker. */
    public boolean batched() {
        return batchSize > 1;
    }
}
