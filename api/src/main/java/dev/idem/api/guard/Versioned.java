package dev.idem.api.guard;

/**
 * A value read together with the version it was read at, to pass back to {@link OptimisticUpdate#update}.
 * Immutable and thread-safe when {@code value} is; {@link OptimisticUpdate#read} hands out unmodifiable maps.
 *
 * @param value   what was read
 * @param version the row's version when it was read
 * @param <T>     the value's type
 */
public record Versioned<T>(T value, long version) {
}
