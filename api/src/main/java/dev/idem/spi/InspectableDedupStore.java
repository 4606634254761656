package dev.idem.spi;

import java.util.Optional;

/**
 * An optional capability of a {@link DedupStore}: an operator's view of its keys, for tools such as
 * {@code idem store get|delete|stats}. The runtime's pipeline never calls it; a tool checks
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
}
