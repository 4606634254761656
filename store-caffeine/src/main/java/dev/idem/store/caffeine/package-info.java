/**
 * The in-memory {@code caffeine} dedup store. {@link dev.idem.store.caffeine.CaffeineDedupStoreProvider}
 * is the only supported type; the rest is implementation.
 */
package dev.idem.store.caffeine;
