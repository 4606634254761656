/**
 * The outbox relay of transactional mode: one thread per process that publishes, confirmed, the messages handlers
 * emitted into the store's outbox table in their transactions, and deletes them once the broker confirmed them.
 */
package dev.idem.runtime.internal.outbox;
