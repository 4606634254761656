/**
 * The {@code redis} dedup store, on Lettuce. {@link dev.idem.store.redis.RedisDedupStoreProvider} is the
 * only supported type; the rest is implementation.
 */
package dev.idem.store.redis;
