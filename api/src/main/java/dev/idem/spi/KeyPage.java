package dev.idem.spi;

import java.util.List;

/**
 * One page of an {@link InspectableDedupStore#list} listing.
 *
 * @param keys the keys found, at most the {@code limit} asked for; may be empty while the listing goes on
 * @param cursor what to pass to the next call to go on, or {@code null} when the listing is done. Opaque: only
 *        the store that made it reads it, and only for the same namespace and filter
 */
public record KeyPage(List<ListedKey> keys, String cursor) {

    public KeyPage {
        keys = List.copyOf(keys);
    }

    /** Whether this is the listing's last page. */
    public boolean last() {
        return cursor == null;
    }
}
