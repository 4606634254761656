package dev.idem.spi;

import java.time.Duration;
import java.util.List;

/**
 * An optional capability of a {@link DedupStore}: the watermarks of the sequence guard
 * ({@code pipelines.<name>.sequence}), one per aggregate, kept beside the keys. See docs/design.md,
 * "The sequence guard".
 *
 * <p>The runtime runs the events of one aggregate one at a time. Before an event runs it reads the
 * aggregate's {@link #watermark}: an event numbered at or below it is stale (acked, not run); the next
 * number runs, and its key's completion raises the watermark in the same atomic step
 * ({@link #completeAndAdvance}, or {@link #completeAll} with {@link CompletionRequest#advance()}), so a
 * crash leaves either both or neither. A transactional store that is also sequenced checks and raises
 * the watermark inside the handler's transaction through
 * {@link TransactionalDedupStore#runOnce(StoreKey, String, Duration, SequenceAdvance, boolean, TransactionalDedupStore.Work)}.
 *
 * <p>Thread-safe like every store. A watermark is never lowered; it is forgotten only when its
 * {@link SequenceAdvance#retention()} passes without a change. Failures are {@link StoreException}s.
 */
public interface SequencedDedupStore extends DedupStore {

    /**
     * The aggregate's watermark: the highest sequence number completed for it.
     *
     * @param aggregate the pipeline's namespace and the aggregate's ID
     * @return the watermark, or {@code 0} when none is remembered
     * @throws StoreException when the store cannot answer
     */
    long watermark(StoreKey aggregate);

    /**
     * Completes {@code key} exactly as {@link #complete} does and, in the same atomic step, raises the
     * aggregate's watermark to {@code advance.number()} unless it is already at or above it, refreshing
     * its retention. Idempotent for the key's owner.
     *
     * @return {@code false} if {@code token} is not the current owner's; neither the key nor the watermark
     *         is changed then
     * @throws StoreException when the store cannot answer; neither may then be assumed changed
     */
    boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance);

    /**
     * Completes a batch like {@link DedupStore#completeAll}; a request with an
     * {@link CompletionRequest#advance()} raises its watermark in the same atomic step as its key, as
     * {@link #completeAndAdvance} does.
     */
    @Override
    default List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        return DedupStore.super.completeAll(requests);
    }
}
