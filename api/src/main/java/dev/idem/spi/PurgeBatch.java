package dev.idem.spi;

/**
 * What one {@link InspectableDedupStore#purge} call did.
 *
 * @param deleted how many completed keys it deleted, at most the {@code limit} asked for
 * @param cursor what to pass to the next call to go on, or {@code null} when the purge is done. Opaque: only the
 *        store that made it reads it, and only for the same namespace and time
 */
public record PurgeBatch(long deleted, String cursor) {

    public PurgeBatch {
        if (deleted < 0) {
            throw new IllegalArgumentException("deleted cannot be negative: " + deleted);
        }
    }

    /** Whether the purge is done: every key of the namespace was visited. */
    public boolean last() {
        return cursor == null;
    }
}
