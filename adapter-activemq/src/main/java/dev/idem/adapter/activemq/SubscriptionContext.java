package dev.idem.adapter.activemq;

import dev.idem.spi.DeliveryListener;

/** What a {@link SessionWorker} needs from its subscription. */
interface SubscriptionContext {

    /** The pipeline's name, for dead-letter reasons and logs. */
    String pipeline();

    JmsDestination source();

    JmsDestination deadLetter();

    DeliveryListener listener();

    Publishers publishers();

    /** The worker's session failed for good (no {@code failover:} transport, or the broker refused). */
    void failed(SessionWorker worker, Exception cause);
}
