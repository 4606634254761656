package dev.idem.spi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Remembers which idempotency keys are claimed and completed. See docs/design.md, "A key's
 * life in the store":
 * <pre>
 * absent --claim--&gt; CLAIMED(token, lease, attempts, fingerprint)
 * CLAIMED --complete(token)--&gt; COMPLETED (until retention runs out, then absent)
 * CLAIMED --release(token)--&gt; absent
 * CLAIMED, lease ran out --claim--&gt; CLAIMED by the new owner, attempts + 1
 * </pre>
 *
 * <p>Implementations are thread-safe: the runtime calls them from many threads, and several
 * processes may share one store. Every state change is atomic per key. Leases and retention use
 * the store's own clock where it has one. Failures are {@link StoreException}s, never a
 * silently wrong answer.
 */
public interface DedupStore extends AutoCloseable {

    /**
     * Claims a batch of keys atomically per key, in one round trip where the store allows it.
     * A key repeated within the batch is acquired at most once; its later requests answer
     * {@link ClaimResult.InProgress}.
     *
     * @return one result per request, in request order
     * @throws StoreException when the store cannot answer; no key of the batch may then be assumed claimed
     */
    List<ClaimResult> claim(List<ClaimRequest> requests);

    /**
     * Marks a claimed key completed, to be remembered for {@code retention}. Idempotent for its owner:
     * completing again with the token that completed the key answers {@code true} and changes nothing,
     * so a call retried after a timeout whose write did land is not mistaken for a lost lease.
     * An owner whose lease ran out may still complete while nobody has taken the key over.
     *
     * @return {@code false} if {@code token} is not the current owner's (the lease ran out and
     *         another consumer took the key over, or the key was released); nothing is changed then
     * @throws StoreException when the store cannot answer
     */
    boolean complete(StoreKey key, long token, Duration retention);

    /**
     * Completes a batch of claimed keys, each exactly as {@link #complete} would: fenced by its own
     * token, so stale and current tokens may be mixed, and idempotent for its owner. One round trip (or
     * one statement, one script call) where the store allows it; the runtime sends the completions of
     * messages whose handlers finished within {@code commit.linger} of each other.
     *
     * <p>The default completes the keys one by one, so a store written before this method keeps working.
     * After a {@linkplain StoreException#retriable() retriable} failure it does not try the rest: they are
     * reported {@link CompletionResult.Failed} with the same cause.
     *
     * @return one result per request, in request order; a key whose write failed while others landed is
     *         {@link CompletionResult.Failed}
     * @throws IllegalArgumentException (the default) if a request carries a {@link CompletionRequest#reply()}, which
     *         only a {@link ReplyStore} stores; nothing is completed then
     * @throws StoreException when the store cannot answer for the batch; no key of it may then be assumed
     *         completed
     */
    default List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        for (CompletionRequest request : requests) {
            if (request.reply() != null) {
                // Only a ReplyStore stores a reply (its completeAll overrides this one): never drop one silently.
                throw new IllegalArgumentException(getClass().getName() + " is not a ReplyStore: a completion"
                        + " request must not carry a reply");
            }
        }
        List<CompletionResult> results = new ArrayList<>(requests.size());
        StoreException unreachable = null;
        for (CompletionRequest request : requests) {
            if (unreachable != null) {
                results.add(new CompletionResult.Failed(unreachable));
                continue;
            }
            try {
                boolean completed = request.advance() != null && this instanceof SequencedDedupStore sequenced
                        ? sequenced.completeAndAdvance(request.key(), request.token(), request.retention(),
                                request.advance())
                        : complete(request.key(), request.token(), request.retention());
                results.add(completed ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER);
            } catch (StoreException e) {
                results.add(new CompletionResult.Failed(e));
                if (e.retriable()) {
                    unreachable = e;
                }
            }
        }
        return results;
    }

    /**
     * Gives a claimed key up, so that the next claim acquires it at once (the handler failed, the
     * message is dead-lettered, or the runtime is stopping). A completed key is never released.
     *
     * @return {@code false} if {@code token} is not the current owner's or the key is completed;
     *         nothing is changed then
     * @throws StoreException when the store cannot answer
     */
    boolean release(StoreKey key, long token);

    /**
     * Extends the lease of a claimed key to {@code lease} from now.
     *
     * @return {@code false} if {@code token} is not the current owner's; nothing is changed then
     * @throws StoreException when the store cannot answer
     */
    boolean renew(StoreKey key, long token, Duration lease);

    /** What {@link #recordStart} answers for a store that does not record starts. */
    int STARTS_NOT_RECORDED = -1;

    /**
     * Records, outside any business transaction, that a handler run of a claimed key is about to
     * start, and answers how many starts the key has recorded since it was first claimed, this one
     * included. The count survives a takeover (a claim of the key after its lease ran out) and is
     * forgotten with the key (release, or retention of an abandoned claim running out).
     *
     * <p>The runtime calls it only for <em>suspects</em>, keys acquired by takeover
     * ({@link ClaimResult.Acquired#attempt()} above 1), and runs a suspect alone. So a start that
     * never completed was a run that took its consumer down, and a key whose count passes
     * {@code max-deliveries} is dead-lettered without running again, while keys that were merely in
     * flight beside it are never blamed. The happy path never calls it.
     *
     * <p>The default answers {@link #STARTS_NOT_RECORDED}; the runtime then counts takeovers
     * instead, which also blames keys that were in flight beside a crash.
     *
     * @return the number of recorded starts, including this one; {@code 0} if {@code token} is not the
     *         current owner's (nothing is recorded then); or {@link #STARTS_NOT_RECORDED}
     * @throws StoreException when the store cannot answer
     */
    default int recordStart(StoreKey key, long token) {
        return STARTS_NOT_RECORDED;
    }

    /** Checks that the store is reachable; used by readiness checks. */
    default void checkHealth() {
    }

    /** Releases connections and threads. Called once, after the last other call. */
    @Override
    void close();
}
