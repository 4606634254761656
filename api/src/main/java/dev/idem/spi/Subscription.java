package dev.idem.spi;

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
     * Stops consuming and frees the subscription's resources. Deliveries not settled by then are
     * left to the broker to redeliver; none is acknowledged by closing. Idempotent.
     */
    @Override
    void close();
}
