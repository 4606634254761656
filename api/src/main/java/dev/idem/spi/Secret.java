package dev.idem.spi;

import java.util.Objects;

/**
 * A configuration value that must never be printed: passwords, tokens, keys.
 * {@link #toString()} masks it; only {@link #reveal()} returns the value.
 */
public final class Secret {

    private static final String MASK = "******";

    private final String value;

    public Secret(String value) {
        this.value = Objects.requireNonNull(value, "value");
    }

    /** The secret itself; pass it straight to the client that needs it. */
    public String reveal() {
        return value;
    }

    @Override
    public String toString() {
        return MASK;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Secret other && other.value.equals(value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }
}
