package dev.idem.spi;

import java.time.Instant;
import java.util.Objects;

/**
 * One message in an {@link OutboxStore}'s outbox: written by a handler's transaction, waiting for the
 * relay to publish it.
 *
 * @param id the row's ID in the outbox, unique per store
 * @param namespace the pipeline namespace that emitted it
 * @param destination where to publish it (topic, exchange or queue, as the adapter's {@link BrokerAdapter#publish} takes it)
 * @param message the message, with its deterministic ID in {@link OutboundMessage#messageId()} and its headers
 * @param createdAt when the emitting transaction wrote it, by the store's clock
 */
public record OutboxRecord(long id, String namespace, String destination, OutboundMessage message, Instant createdAt) {

    public OutboxRecord {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(createdAt, "createdAt");
    }
}
