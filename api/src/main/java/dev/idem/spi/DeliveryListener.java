package dev.idem.spi;

import java.util.List;

/**
 * Receives batches of deliveries from a {@link BrokerAdapter} subscription. Implemented by the
 * runtime's pipeline.
 *
 * <p>Called from the adapter's consumer threads, one batch at a time per thread. It may block to
 * apply back-pressure, until the pipeline has room for the batch. It does not throw; it settles every
 * delivery of the batch later, from any thread.
 */
@FunctionalInterface
public interface DeliveryListener {

    void onDeliveries(List<Delivery> batch);
}
