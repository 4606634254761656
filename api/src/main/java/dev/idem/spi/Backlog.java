package dev.idem.spi;

/**
 * What a destination holds for one reader, from {@link BrokerAdapter#backlog}: enough for a tool that reads it
 * once to its end ({@code idem dlq replay}) to know when it is done, and what acknowledging does.
 *
 * @param messages how many messages a subscription made now would be handed before it reaches the end as it is
 *        now: a queue's ready messages; on a log, the records between the reader's committed position (where a
 *        new reader starts, if it has none) and the end. It may count messages that never arrive (another
 *        consumer takes them, a log's transaction markers or compacted records), so a reader also stops when
 *        nothing came for a while; it never counts fewer than arrive, apart from messages added after the call
 * @param retained whether a message stays in the destination once acknowledged, acknowledging only moving this
 *        reader past it (a log, such as a Kafka topic read by a consumer group); {@code false} when acknowledging
 *        removes it for every reader (a queue)
 */
public record Backlog(long messages, boolean retained) {

    public Backlog {
        if (messages < 0) {
            throw new IllegalArgumentException("messages cannot be negative: " + messages);
        }
    }
}
