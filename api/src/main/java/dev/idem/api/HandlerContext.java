package dev.idem.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

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
     * {@link #send(String, String, byte[], Map)} with an object for the body, encoded as the pipeline reads payloads:
     * by the handler's own {@link PayloadCodec} when it implements one, else a {@code String} as its UTF-8 text and any
     * other object as JSON with the runtime's Jackson (the settings it decodes with). A {@code byte[]} goes as it is.
     *
     * @throws IllegalArgumentException if the object cannot be encoded
     * @throws UnsupportedOperationException as {@link #send(String, String, byte[], Map)} does, and for an object
     *         other than a {@code byte[]} in a context that cannot encode (a test double)
     */
    default String send(String destination, String key, Object payload, Map<String, String> headers) {
        if (payload instanceof byte[] bytes) {
            return send(destination, key, bytes, headers);
        }
        throw new UnsupportedOperationException("this handler context cannot encode objects");
    }

    /** {@link #send(String, String, Object, Map)} without a message key. */
    default String send(String destination, Object payload, Map<String, String> headers) {
        return send(destination, null, payload, headers);
    }

    /**
     * Replies to this message, a request that carries a reply address ({@link Message#replyTo()}): the reply goes to
     * that address with the request's correlation ID (AMQP {@code correlation_id}, {@code JMSCorrelationID}, Kafka's
     * {@code kafka_correlationId} header), once the run succeeded, and is stored with the message's key. A duplicate
     * of the request does not run the handler: it gets the stored reply, sent again to its own reply address with its
     * own correlation ID. So every copy of a request gets the same reply, whichever process runs it and however often
     * the broker redelivers it.
     *
     * <p>Nothing leaves before the handler returns, and a run that fails sends nothing. In plain mode the reply is
     * stored atomically with the key's completion, then published, then the request is acked (a crash in between
     * makes the redelivered request a duplicate, which sends the stored reply). In transactional mode it is stored in
     * the handler's transaction and published through the outbox after the commit, so a rolled-back run never
     * replies. One reply per run: a second call replaces the first.
     *
     * @param payload the reply's body
     * @param headers headers to send with it; may be empty
     * @throws IllegalStateException if the message carries no reply address, or runs without an idempotency key (its
     *         reply could not be stored for its duplicates)
     * @throws IllegalArgumentException if the reply is larger than the pipeline's {@code reply.max-size}
     * @throws UnsupportedOperationException if the pipeline's dedup store keeps no replies (it does not implement
     *         {@code dev.idem.spi.ReplyStore}), or this context cannot reply (a test double)
     */
    default void reply(byte[] payload, Map<String, String> headers) {
        throw new UnsupportedOperationException("this handler context cannot reply");
    }

    /**
     * {@link #reply(byte[], Map)} with an object for the body, encoded as {@link #send(String, String, Object, Map)}
     * encodes one.
     *
     * @throws IllegalArgumentException if the object cannot be encoded
     */
    default void reply(Object payload) {
        if (payload instanceof byte[] bytes) {
            reply(bytes, Map.of());
            return;
        }
        throw new UnsupportedOperationException("this handler context cannot encode objects");
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

    /**
     * Runs {@code action} once per message and returns its result, recorded in the dedup store: a durable step. The
     * first run of the message that reaches the step runs the action, records its result under the message's key
     * (fenced by the claim's token, so a consumer whose claim was taken over cannot record over the new owner) and
     * only then returns it. A later run of the same message, after an in-process retry, a crash and a lease
     * takeover, or a hand-back to the broker, returns the recorded result without running the action again. So a
     * handler that charges a card in a step, then fails on a later line, does not charge again when it is retried.
     *
     * <p><b>What a step cannot do.</b> A step that started but was not recorded runs again: the process may die
     * after the action took effect and before its result reached the store. That is the window
     * {@link #idempotencyKey(String)} closes: give the action's call the derived key (a payment API's
     * {@code Idempotency-Key}), and the other service applies the second call once. A step and a key together make
     * the call effectively once; either alone leaves a window.
     *
     * <p><b>Names.</b> The name identifies the step within the message: a second {@code step} with a name this
     * message already recorded returns that result without running its action, in the same run too. Give each step
     * its own name (in a loop, add the index: {@code "charge-" + i}); at most 255 bytes of UTF-8, not blank.
     *
     * <p><b>Results.</b> Recorded as JSON through the runtime's Jackson (records, beans, collections, strings,
     * numbers; {@code null} too), or as the bytes themselves for {@code byte[]}, and read back as {@code type} (with
     * the handler's class loader). A result larger than the pipeline's {@code steps.max-size} once encoded is not
     * recorded: the step fails with {@link NonRetryableException}, since running the action again would repeat its
     * effect. Record what a re-run needs (a charge's ID), not a whole response.
     *
     * <p><b>Lifetime.</b> A step is kept while its message is in flight, across takeovers and hand-backs (a dead
     * letter replayed later finds it too), and is forgotten at the latest {@code retention} after it was recorded, so
     * the message arriving again after its key was forgotten runs every step afresh.
     *
     * <p><b>Transactional mode.</b> The step is recorded outside the handler's transaction, at once: the effect it
     * records (a call to another system) does not roll back, so neither does its record. A rolled-back run that is
     * retried returns the recorded result.
     *
     * <p>A message run without a claim (no idempotency key under {@code missing-id: unprotected}, a fingerprint
     * mismatch under {@code fingerprint-mismatch: process}) has nothing to record under: its steps run their action
     * every time, as the rest of such a run does.
     *
     * @param name the step's name within the message
     * @param type the result's type; {@code byte[]} is recorded as it is
     * @param action what the step does; called at most once per message unless it throws or its result was not
     *        recorded (see above)
     * @return the action's result, or the result recorded by an earlier run
     * @throws Exception what {@code action} threw (nothing is recorded then, and a later run runs it again)
     * @throws NonRetryableException if the result is too large to record, or a recorded result cannot be read as
     *         {@code type}
     * @throws IllegalArgumentException if {@code name} is blank or too long
     * @throws UnsupportedOperationException if the pipeline's dedup store keeps no steps (it does not implement
     *         {@code dev.idem.spi.StepStore}), or this context cannot record steps (a test double)
     */
    default <T> T step(String name, Class<T> type, Callable<T> action) throws Exception {
        throw new UnsupportedOperationException("this handler context cannot record steps");
    }

    /**
     * {@link #step(String, Class, Callable)} for a step without a result: {@code action} runs
     * once per message, and a later run skips it once its completion was recorded.
     *
     * @throws Exception what {@code action} threw (nothing is recorded then, and a later run runs it again)
     */
    default void step(String name, StepAction action) throws Exception {
        step(name, Void.class, () -> {
            action.run();
            return null;
        });
    }

    /** What a step without a result does: {@link Runnable} that may throw. */
    @FunctionalInterface
    interface StepAction {
        void run() throws Exception;
    }
}
