package dev.idem.spring.boot;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.testkit.memory.InMemoryBroker;

/** The in-memory broker, whose health check fails while {@link #down} is set, as an unreachable broker's does. */
final class FlakyBroker implements BrokerAdapter {

    final InMemoryBroker broker = new InMemoryBroker();
    volatile boolean down;

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        return broker.subscribe(request, listener);
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        broker.publish(destination, message);
    }

    @Override
    public void checkHealth() {
        if (down) {
            throw new BrokerException("Connection refused: broker unreachable", true);
        }
        broker.checkHealth();
    }

    @Override
    public void close() {
        broker.close();
    }
}
