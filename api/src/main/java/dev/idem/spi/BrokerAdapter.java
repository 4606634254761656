package dev.idem.spi;

import java.util.Optional;

/**
 * A connection to one broker: consumes sources for pipelines and publishes messages.
 *
 * <p>Created by a {@link BrokerAdapterProvider}; thread-safe. Every message a subscription hands
 * over carries its own {@link Delivery} handle; nothing is acknowledged except through it.
 */
public interface BrokerAdapter extends AutoCloseable {

    /**
     * Starts consuming {@code request.source()} and pushes batches of deliveries to {@code listener}
     * from the adapter's own threads.
     *
     * @throws BrokerException if the source cannot be consumed
     */
    Subscription subscribe(SubscriptionRequest request, DeliveryListener listener);

    /**
     * Publishes one message and returns once the broker has confirmed it.
     *
     * @throws BrokerException if the broker did not confirm it
     */
    void publish(String destination, OutboundMessage message);

    /** Checks that the broker is reachable; used by readiness checks. Throws {@link BrokerException}. */
    default void checkHealth() {
    }

    /**
     * Where this adapter dead-letters the messages of {@code source} when their pipeline names no dead-letter
     * destination ({@code pipelines.<name>.dead-letter}): the destination {@link #subscribe} uses for a request
     * whose {@link SubscriptionRequest#deadLetterDestination()} is {@code null}. Lets an operator's tool
     * ({@code idem dlq replay}) find a pipeline's dead letters. Must not contact the broker; thread-safe.
     *
     * @return the destination as {@link #publish} and {@link #subscribe} accept it, or {@code null} (the default)
     *         when the adapter has no default and a pipeline must name one
     */
    default String defaultDeadLetterDestination(String source) {
        return null;
    }

    /**
     * Starts consuming one of this adapter's dead-letter destinations for an operator's tool that reads it and
     * moves its messages elsewhere ({@code idem dlq replay}, which publishes each message back to its pipeline's
     * source, then acknowledges it). As {@link #subscribe}, except that {@code request.source()} is consumed as
     * it is: the adapter declares, binds or configures nothing for it (a pipeline source's bindings or queue
     * type do not apply to a dead-letter queue). {@code request.pipeline()} names the reader (consumer group,
     * subscription), never a pipeline's own. Deliveries left unsettled when the subscription closes stay in the
     * destination, as {@link Subscription#close()} says.
     *
     * <p>The default calls {@link #subscribe}, which suits adapters whose {@code subscribe} sets nothing up.
     *
     * @throws BrokerException if the destination cannot be consumed
     */
    default Subscription subscribeDeadLetters(SubscriptionRequest request, DeliveryListener listener) {
        return subscribe(request, listener);
    }

    /**
     * What {@code request.source()} holds now for a subscription of {@code request} (the reader
     * {@code request.pipeline()}): how many messages it would be handed, and whether acknowledging removes them.
     * Called before subscribing by tools that read a destination once to its end ({@code idem dlq replay}); a
     * destination that does not exist holds nothing. Thread-safe; may contact the broker.
     *
     * @return the backlog, or empty (the default) when the adapter cannot tell: callers then read until nothing
     *         came for a while, and treat acknowledging as removing
     * @throws BrokerException if the broker cannot be asked
     */
    default Optional<Backlog> backlog(SubscriptionRequest request) {
        return Optional.empty();
    }

    /** Closes every subscription (see {@link Subscription#close()}) and the connection. Idempotent. */
    @Override
    void close();
}
