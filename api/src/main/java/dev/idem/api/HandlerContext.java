package dev.idem.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
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

    /**
     * Emits a message to {@code destination} as part of this run. Its ID is derived from the pipeline's
     * namespace, this message's idempotency key and the emit's ordinal in the run (a name-based UUID), and
     * is written to the pipeline's {@code emit.id-header} header and, where the broker lets the sender
     * choose one, as the broker's message ID. A run of the same message after a crash or a retry emits the
     * same IDs, so a downstream Idem pipeline that takes its key from that header drops the copies.
     *
     * <p>Nothing leaves before the handler returns. In plain mode the runtime publishes the emitted
     * messages, each confirmed by the broker, after the handler returns and before the key completes; a
     * failed publish fails the run. In transactional mode they are written to the store's outbox in the
     * handler's transaction and published by the outbox relay after it commits.
     *
     * @param destination the topic, exchange or queue, as the broker adapter publishes to it
     * @param key the message key (Kafka record key), or {@code null}
     * @param payload the body
     * @param headers headers to send with it; may be empty
     * @return the emitted message's ID
     * @throws UnsupportedOperationException if this context cannot emit (a test double, or a message
     *         without an idempotency key, whose re-runs could not repeat the IDs)
     */
    default String send(String destination, String key, byte[] payload, Map<String, String> headers) {
        throw new UnsupportedOperationException("this handler context cannot emit messages");
    }

    /** {@link #send(String, String, byte[], Map)} without a message key. */
    default String send(String destination, byte[] payload, Map<String, String> headers) {
        return send(destination, null, payload, headers);
    }

    /**
     * A key for a call this run makes to another service that deduplicates by key, such as the
     * {@code Idempotency-Key} header of a payment API (the convention of Stripe, Adyen and the IETF draft): the same
     * for every run of this message, on any process, so the other service applies a re-run's call once. It is a
     * name-based UUID of the pipeline's namespace, this message's idempotency key and {@code scope}; each scope
     * (one per kind of call, such as {@code "charge"} or {@code "refund"}) gives another key. It is the window
     * plain mode leaves open (a crash after the call and before the key completes re-runs the handler) that such a
     * key closes, as far as the other service honours it.
     *
     * @param scope what the key is for, told apart from this run's other calls; not blank
     * @return a UUID in its canonical text form
     * @throws IllegalArgumentException if {@code scope} is {@code null} or blank
     * @throws UnsupportedOperationException if the message runs without an idempotency key, whose re-runs could
     *         not repeat the key, or if this context cannot derive one (a test double)
     */
    default String idempotencyKey(String scope) {
        throw new UnsupportedOperationException("this handler context cannot derive idempotency keys");
    }
}
