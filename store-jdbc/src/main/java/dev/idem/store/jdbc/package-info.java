/**
 * The {@code jdbc} dedup store, on PostgreSQL, MariaDB/MySQL or an embedded H2 file.
 * {@link JdbcDedupStoreProvider} is the only supported type; the rest is implementation.
 */
package dev.idem.store.jdbc;
