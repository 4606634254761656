package dev.idem.spi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * An optional capability of a {@link DedupStore}: the reply a handler sent for a request message, stored with the
 * key's completion, so that a duplicate of the request does not run the handler and gets the stored reply sent again.
 * See docs/design.md, "Request/reply and the stored reply".
 *
 * <p><b>Atomic with the completion.</b> The reply is written in the same atomic step as the completion it comes with:
 * {@link #completeWithReply}, {@link #completeAll} with a {@link CompletionRequest#reply()}, or, in transactional mode,
 * {@link #recordReply} inside the run's transaction. Whoever sees the key completed sees its reply: there is no
 * moment at which a claim answers {@link ClaimResult.Duplicate} and {@link #reply} still answers empty for a key
 * completed with a reply, and no reply is ever stored for a completion that did not happen.
 *
 * <p><b>Fencing.</b> Storing a reply is fenced exactly as {@link #complete} is: only the token of the key's current
 * owner completes it, its lease running or over while nobody took the key over; a stale token stores nothing.
 * Completing again with the token that completed the key answers {@code true} and changes nothing, the reply stored
 * with the first completion included. Reading a reply is not fenced: the consumer of a duplicate holds no token.
 *
 * <p><b>Lifetime.</b> A reply is remembered exactly as long as the completion it was stored with: for the
 * completion's retention, and no longer where the store forgets a completion sooner (a bounded cache); an
 * {@link InspectableDedupStore} forgets it with {@link InspectableDedupStore#delete} and
 * {@link InspectableDedupStore#purge} of the key. A later completion of the key (after the earlier one was forgotten
 * and the key claimed afresh) never shows an earlier life's reply: completed without a reply, the key answers empty.
 *
 * <p><b>Sizes.</b> A reply weighs its payload's bytes plus every header's name and value in bytes of UTF-8
 * ({@link StoredReply#size()}); every store holds a reply of up to {@value #MAX_REPLY_BYTES} bytes, with any payload
 * bytes (empty included) and headers of any text, names and values kept exactly. A heavier reply is refused with an
 * {@link IllegalArgumentException} before anything is written (a {@link CompletionRequest} refuses to be made with
 * one).
 *
 * <p>Thread-safe like every store. Failures are {@link StoreException}s, retriable as for the other calls; no method
 * answers {@code null}.
 */
public interface ReplyStore extends DedupStore {

    /** The heaviest reply, payload plus headers in bytes ({@link StoredReply#size()}), every store holds: 1 MiB. */
    int MAX_REPLY_BYTES = 1 << 20;

    /**
     * Completes {@code key} exactly as {@link #complete} does and, in the same atomic step, stores {@code reply} with
     * the completion. A retention of zero (forget the key at once) stores no reply either.
     *
     * @return {@code false} if {@code token} is not the current owner's; nothing is changed, no reply stored
     * @throws IllegalArgumentException if the reply weighs more than {@value #MAX_REPLY_BYTES} bytes; nothing is
     *         changed then
     * @throws StoreException when the store cannot answer; the key and its reply may both have been written, or
     *         neither, never one without the other
     */
    boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply);

    /**
     * The reply stored with the key's completion, while that completion is remembered.
     *
     * @return the reply, exactly as it was stored; empty when the key is not completed (absent, claimed, forgotten),
     *         or was completed without a reply
     * @throws StoreException when the store cannot answer
     */
    Optional<StoredReply> reply(StoreKey key);

    /**
     * Transactional mode: records {@code reply} as the reply of {@code key}, whose completion {@code transaction} is
     * writing (the key of the {@link TransactionalDedupStore#runOnce runOnce} whose work was handed
     * {@code transaction}; in a group, the member's own key). Called by the work, inside the transaction: the reply
     * commits with the key and rolls back with it (with a group member's savepoint too). Recording again in the same
     * transaction replaces the reply.
     *
     * <p>The default throws {@link UnsupportedOperationException}: only a {@link TransactionalDedupStore} can
     * implement it.
     *
     * @throws IllegalArgumentException if the reply weighs more than {@value #MAX_REPLY_BYTES} bytes, or
     *         {@code transaction} is not one this store handed a work, or does not complete {@code key}
     * @throws IllegalStateException once the work has returned: the transaction is the store's again
     * @throws StoreException when the database fails; the work should let it propagate, so that the transaction
     *         rolls back
     * @throws UnsupportedOperationException if the store has no transactional mode
     */
    default void recordReply(TransactionalDedupStore.StoreTransaction transaction, StoreKey key, StoredReply reply) {
        throw new UnsupportedOperationException(getClass().getName() + " has no transactional mode: it cannot record a"
                + " reply inside a transaction");
    }

    /**
     * Completes a batch like {@link DedupStore#completeAll}; a request with a {@link CompletionRequest#reply()} stores
     * it in the same atomic step as its key, as {@link #completeWithReply} does.
     *
     * <p>The default completes each request with a reply by {@link #completeWithReply} and every other one as
     * {@link DedupStore#completeAll}'s default does, one after another. A request with both a reply and an
     * {@link CompletionRequest#advance()} needs a store that writes the three at once: the default fails it
     * ({@link CompletionResult.Failed}, not retriable), so a store that is also a {@link SequencedDedupStore} overrides
     * this method.
     */
    @Override
    default List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        List<CompletionResult> results = new ArrayList<>(requests.size());
        StoreException unreachable = null;
        for (CompletionRequest request : requests) {
            if (unreachable != null) {
                results.add(new CompletionResult.Failed(unreachable));
                continue;
            }
            try {
                boolean completed;
                if (request.reply() == null) {
                    completed = request.advance() != null && this instanceof SequencedDedupStore sequenced
                            ? sequenced.completeAndAdvance(request.key(), request.token(), request.retention(),
                                    request.advance())
                            : complete(request.key(), request.token(), request.retention());
                } else if (request.advance() != null) {
                    throw new StoreException(getClass().getName() + " cannot store a reply and raise a watermark in"
                            + " one step (it does not override ReplyStore.completeAll)", false);
                } else {
                    completed = completeWithReply(request.key(), request.token(), request.retention(),
                            request.reply());
                }
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
     * Checks a reply's weight as every store must; for implementations.
     *
     * @throws IllegalArgumentException naming the weight and the bound
     * @throws NullPointerException if {@code reply} is {@code null}
     */
    static void check(StoredReply reply) {
        long size = reply.size();
        if (size > MAX_REPLY_BYTES) {
            throw new IllegalArgumentException("A reply of " + reply.payloadLength() + " bytes of payload and "
                    + (size - reply.payloadLength()) + " bytes of headers weighs " + size + " bytes; at most "
                    + MAX_REPLY_BYTES + " are kept");
        }
    }
}
