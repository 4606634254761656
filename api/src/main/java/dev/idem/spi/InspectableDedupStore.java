package dev.idem.spi;

import java.time.Instant;
import java.util.Optional;

/**
 * An optional capability of a {@link DedupStore}: an operator's view of its keys, for tools such as
 * {@code idem store get|delete|stats|list|purge}. The runtime's pipeline never calls it; a tool checks
 * {@code store instanceof InspectableDedupStore} and says so when a store does not offer it.
 *
 * <p>Implementations are thread-safe and may be called while pipelines use the store. Each call reads
 * the store's own clock, as {@link DedupStore#claim} does, so what it shows agrees with what the next
 * claim would decide. Failures are {@link StoreException}s, retriable as for the other calls; no method
 * answers {@code null}.
 */
public interface InspectableDedupStore extends DedupStore {

    /**
     * The key as a claim would see it now.
     *
     * @return the key's state; empty when the key is absent, and also when its claim's lease ran out
     *         (the claim is then only remembered for its attempt count, and the next claim takes it over)
     *         or its completion's retention ran out
     * @throws StoreException when the store cannot answer
     */
    Optional<StoredKey> inspect(StoreKey key);

    /**
     * Removes the key whatever its state, so that the next claim acquires it afresh with attempt 1 and a
     * replay of the message is processed again. A claim whose lease ran out is removed too, with its
     * attempt count.
     *
     * <p>This breaks fencing for a live owner: its handler keeps running, but its {@code complete},
     * {@code renew} and {@code release} then answer {@code false}, as for a lost lease, and a redelivery
     * may run the handler a second time meanwhile. Delete a claimed key only when its owner is known to be
     * gone.
     *
     * @return {@code true} if the key was claimed or completed (as {@link #inspect} would have shown it);
     *         {@code false} if it was absent or its claim's lease had run out
     * @throws StoreException when the store cannot answer; the key may or may not have been removed
     */
    boolean delete(StoreKey key);

    /**
     * Counts the keys claimed (with a live lease) and completed (within their retention), across all
     * namespaces. Each store documents what this costs and how exact it is: it may visit every key, stop
     * at a bound (then {@link StoreStats#truncated()} says so) or count while keys change.
     *
     * @throws StoreException when the store cannot answer
     */
    StoreStats stats();

    /**
     * Lists the keys of one namespace that a claim would see now (claimed with a live lease, or completed within
     * their retention), a page at a time. The first call passes {@code cursor} {@code null}; each next call passes
     * the {@link KeyPage#cursor()} of the page before, with the same namespace and filter, until a page's cursor is
     * {@code null}. A page may hold fewer keys than {@code limit}, even none, before the last.
     *
     * <p>No snapshot is taken and nothing is locked for longer than a call: pipelines go on using the store. Every
     * key present in the namespace, and matching {@code filter}, from the first call to the last is listed
     * exactly once; a key claimed, completed, released or removed meanwhile may or may not be. Each key is shown
     * as {@link #inspect} would have shown it at some moment during the call that found it. A store that cannot
     * promise "exactly once" under some condition documents the condition. The order is the store's own.
     *
     * <p>The default throws {@link UnsupportedOperationException}, so that a store written before this method
     * keeps compiling; tools report it as a store that cannot list its keys.
     *
     * @param filter which keys: {@link KeyFilter#ALL} for every key
     * @param cursor {@code null} for the first page, else the cursor of the page before
     * @param limit the most keys the page may hold; at least 1. A store may hold fewer per page than asked
     * @throws IllegalArgumentException if {@code limit} is below 1, or (where the store can tell) {@code cursor} is
     *         not one it made
     * @throws UnsupportedOperationException if the store cannot list its keys
     * @throws StoreException when the store cannot answer; calling again with the same cursor goes on from there
     */
    default KeyPage list(String namespace, KeyFilter filter, String cursor, int limit) {
        throw new UnsupportedOperationException(getClass().getName() + " cannot list its keys (it does not override "
                + "InspectableDedupStore.list)");
    }

    /**
     * Deletes, a bounded batch per call, the completed keys of one namespace whose retention ends before
     * {@code expiringBefore}, as {@link StoredKey#expiresAt()} shows it: what an operator's {@code purge --older-than}
     * asks for, since a key completed longer ago ends its retention sooner. A claimed key, live or not, is never
     * deleted, nor a key of another namespace; each key is checked again and deleted in one atomic step, so a key
     * removed and claimed anew since it was found is left alone. A deleted key's next claim acquires it afresh, as
     * after {@link #delete}.
     *
     * <p>The first call passes {@code cursor} {@code null}; each next call passes the {@link PurgeBatch#cursor()}
     * of the call before, with the same namespace and {@code expiringBefore}, until it is {@code null}. A call
     * deletes at most {@code limit} keys and visits a bounded number of keys, so it may delete none before the last;
     * a key that qualifies from the first call to the last is deleted by one of them, unless another transaction
     * holds it when its turn comes and the store documents that it passes over such keys.
     *
     * <p>The default throws {@link UnsupportedOperationException}, so that a store written before this method
     * keeps compiling; tools report it as a store that cannot purge.
     *
     * @param expiringBefore a wall-clock instant of this host: a completed key is deleted if the time left of its
     *        retention, on the store's clock, ends before it (with the precision {@link StoredKey#expiresAt()} has)
     * @param cursor {@code null} for the first call, else the cursor the call before answered
     * @param limit the most keys one call deletes; at least 1
     * @throws IllegalArgumentException if {@code limit} is below 1, or (where the store can tell) {@code cursor} is
     *         not one it made
     * @throws UnsupportedOperationException if the store cannot purge
     * @throws StoreException when the store cannot answer; keys of the failed call may or may not have been
     *         deleted, and calling again with the same cursor goes on from there
     */
    default PurgeBatch purge(String namespace, Instant expiringBefore, String cursor, int limit) {
        throw new UnsupportedOperationException(getClass().getName() + " cannot purge keys (it does not override "
                + "InspectableDedupStore.purge)");
    }
}
