package dev.idem.spi;

import java.util.Map;

/**
 * A running subscription of a {@link BrokerAdapter}. Thread-safe.
 */
public interface Subscription extends AutoCloseable {

    /**
     * Stops handing over new batches. Deliveries already handed over can still be settled until
     * {@link #close()}; the runtime calls this first on a graceful stop, drains, then closes.
     */
    void stop();

    /**
     * What the broker still holds for this subscription, for the {@code idem.backlog} gauge: per partition the
     * end offset minus the committed offset (Kafka), per queue the messages ready for delivery (RabbitMQ,
     * ActiveMQ). Keyed by partition or queue name; empty when the adapter cannot tell.
     *
     * <p>Called by a metrics thread every few seconds, concurrently with consumption. It must return quickly:
     * figures the consumer learned on its own thread, or a cached answer of a broker query at most a few
     * seconds old. Never throws; an unknown figure is left out.
     */
    default Map<String, Long> backlog() {
        return Map.of();
    }

    /**
     * Stops consuming and frees the subscription's resources. Deliveries not settled by then are
     * left to the broker to redeliver; none is acknowledged by closing. Idempotent.
     */
    @Override
    void close();
}
