package dev.idem.spi;

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

    /** Closes every subscription (see {@link Subscription#close()}) and the connection. Idempotent. */
    @Override
    void close();
}
