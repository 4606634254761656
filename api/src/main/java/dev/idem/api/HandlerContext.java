package dev.idem.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What the runtime gives a handler beside the message: its pipeline, a logger, the deadline
 * of this run and, where the dedup store offers one, the store's transaction.
 *
 * <p>Valid only during the {@link MessageHandler#handle} call it was passed to, and only on
 * that thread.
 */
public interface HandlerContext {

    /** The name of the pipeline (consumer) running the handler; also the key namespace. */
    String pipeline();

    /** A logger named after the pipeline. */
    System.Logger logger();

    /** When this run is interrupted as timed out. */
    Instant deadline();

    /** Time left until {@link #deadline()}; zero or negative once it has passed. */
    Duration remaining();

    /**
     * The dedup store's transaction, when the store runs the claim inside one (transactional
     * mode of the JDBC store exposes its Jdbi {@code Handle} and {@code java.sql.Connection}).
     * Writes made through it commit or roll back together with the key's claim.
     *
     * @param type the transaction type wanted
     * @return the transaction, or empty when the store offers none of that type
     */
    <T> Optional<T> transaction(Class<T> type);
}
