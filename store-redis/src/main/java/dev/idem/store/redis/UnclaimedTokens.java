package dev.idem.store.redis;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.StoreKey;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The fencing tokens of claims that failed retriably after they were sent: their script may have run (the answer
 * timed out or was lost with the connection), or it ran and its replication was not confirmed
 * ({@link ReplicaWait}). Such a key may now be held under a token the pipeline never got. The runtime tries a
 * failed claim again with the same requests; were that try to draw new tokens, it would find the key in progress
 * under the lost one and wait for that lease to end, then take it over as a suspect that runs alone. So the next
 * claim of the same key with the same fingerprint sends the same token again, which {@code claim.lua} answers as
 * the claim the key already holds ({@code ACQUIRED} with its attempt), or acquires afresh if the key is not held.
 *
 * <p>Safe because the pipeline never ran anything under such a token: it got no {@code Acquired} for it. A token is
 * {@linkplain #take taken} by one claim only, so two claims of the same key never both get it; and only while less
 * than half the lease passed since the failed claim was sent, by this host's monotonic clock: {@code claim.lua}
 * does not extend the lease of a claim it answers again, and the pipeline, which takes the lease as starting now,
 * renews it once a third of it passed, well before it really ends. Tokens past that are dropped; at most
 * {@value #MAX_ENTRIES} are kept (beyond that a failed claim's keys simply draw new tokens).
 *
 * <p>Thread-safe.
 */
final class UnclaimedTokens {

    static final int MAX_ENTRIES = 100_000;

    /** A token kept for a key, with the fingerprint of its claim and until when it may be sent again. */
    record Entry(long token, String fingerprint, long reusableUntil) {
    }

    private final ConcurrentHashMap<StoreKey, Entry> entries = new ConcurrentHashMap<>();

    /** Until when a token first sent at {@code sentNanos} for {@code request} may be sent again. */
    static long reusableUntil(ClaimRequest request, long sentNanos) {
        // The lease as claim.lua gets it: capped (a century), so that it fits in nanoseconds.
        return sentNanos + RedisDedupStore.micros(request.lease()) * 1_000 / 2;
    }

    /**
     * The token to send again for {@code request}: one {@link #remember remembered} for its key and fingerprint and
     * still reusable at {@code nowNanos}, removed so that no other claim gets it; otherwise {@code null} (draw a new
     * one). Any other entry of the key is dropped.
     */
    Entry take(ClaimRequest request, long nowNanos) {
        if (entries.isEmpty()) {
            return null;
        }
        Entry entry = entries.remove(request.key());
        if (entry == null || nowNanos - entry.reusableUntil > 0
                || !Objects.equals(entry.fingerprint, request.fingerprint())) {
            return null;
        }
        return entry;
    }

    /**
     * Keeps {@code token} for {@code request}'s key until {@code reusableUntil}: a claim that sent it failed
     * retriably. A token sent again keeps the deadline of its first sending, since its lease started then. The
     * first token kept for a key wins: of a key repeated in a batch, the first request is the one that may hold it.
     */
    void remember(ClaimRequest request, long token, long reusableUntil) {
        if (entries.size() >= MAX_ENTRIES) {
            long now = System.nanoTime();
            entries.values().removeIf(entry -> now - entry.reusableUntil > 0);
            if (entries.size() >= MAX_ENTRIES) {
                return;
            }
        }
        entries.putIfAbsent(request.key(), new Entry(token, request.fingerprint(), reusableUntil));
    }

    /** How many tokens are kept; for tests. */
    int size() {
        return entries.size();
    }
}
