package dev.idem.spi;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * An optional capability of a {@link TransactionalDedupStore}: an outbox table in the handler's
 * database. Messages a handler emits in transactional mode are {@linkplain #append appended} in the
 * same transaction as its key and its business rows, so they exist if and only if that transaction
 * committed; a relay in every runtime process then {@linkplain #relay publishes and deletes} them.
 * See docs/design.md, "Emitted messages and the outbox".
 *
 * <p>Thread-safe. Several processes may relay one outbox at once: each {@link #relay} call takes rows
 * no other call holds (row locks skipped, as with {@code FOR UPDATE SKIP LOCKED}), so every row is
 * published at least once, by one process at a time. Failures are {@link StoreException}s.
 */
public interface OutboxStore extends TransactionalDedupStore {

    /** One message to append: where it goes and what it is. */
    record Emitted(String destination, OutboundMessage message) {
        public Emitted {
            Objects.requireNonNull(destination, "destination");
            Objects.requireNonNull(message, "message");
        }
    }

    /** Publishes one outbox row; called by {@link #relay} inside its transaction. */
    @FunctionalInterface
    interface Publisher {
        /**
         * Publishes {@code record} and returns once the broker confirmed it.
         *
         * @throws RuntimeException when it was not confirmed; the row stays in the outbox
         */
        void publish(OutboxRecord record);
    }

    /** How far behind the relay is. */
    record Backlog(long rows, Instant oldest) {
        /** An empty outbox. */
        public static final Backlog EMPTY = new Backlog(0, null);
    }

    /**
     * Writes {@code messages} to the outbox inside {@code transaction}, the one a {@link Work} runs in: they
     * commit or roll back with it.
     *
     * @param transaction the transaction passed to the running {@link Work}
     * @param namespace the emitting pipeline's namespace
     * @throws StoreException when the database refuses the write; the caller's transaction then fails
     */
    void append(StoreTransaction transaction, String namespace, List<Emitted> messages);

    /**
     * Takes up to {@code limit} of the oldest rows no other relay holds, publishes them in order through
     * {@code publisher} inside one transaction, deletes those published and commits. A publish that fails
     * ends the call: the rows published before it are deleted, the rest stay for a later call. A crash
     * leaves every row not yet deleted, to be published again (at least once).
     *
     * @return how many rows were published and deleted
     * @throws StoreException when the database fails; rows whose deletion did not commit stay
     * @throws RuntimeException what {@code publisher} threw, after committing the deletion of the rows before
     */
    int relay(int limit, Publisher publisher);

    /**
     * The number of rows waiting and the age of the oldest, for metrics.
     *
     * @throws StoreException when the store cannot answer
     */
    Backlog backlog();
}
