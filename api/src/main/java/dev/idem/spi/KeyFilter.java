package dev.idem.spi;

import java.util.Objects;

/**
 * Which keys of a namespace {@link InspectableDedupStore#list} lists.
 *
 * @param state only keys in this state, or {@code null} for both
 * @param prefix only keys whose ID starts with this text, compared exactly (as UTF-8 bytes: no case folding
 *        nor normalisation, wildcards such as {@code %}, {@code _} or {@code *} are plain characters); the
 *        empty text for every ID
 */
public record KeyFilter(StoredKey.State state, String prefix) {

    /** Every key of the namespace, claimed or completed. */
    public static final KeyFilter ALL = new KeyFilter(null, "");

    public KeyFilter {
        Objects.requireNonNull(prefix, "prefix");
    }

    /** Whether a key with {@code id}, seen in {@code seen}'s state, passes this filter. */
    public boolean matches(String id, StoredKey seen) {
        return (state == null || state == seen.state()) && id.startsWith(prefix);
    }
}
