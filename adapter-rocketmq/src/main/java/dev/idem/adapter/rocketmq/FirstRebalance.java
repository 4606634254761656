package dev.idem.adapter.rocketmq;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How soon a started consumer owns its queues. RocketMQ 5.3's lite pull consumer sends its first heartbeat (which
 * makes the broker know it as a member of its group) one second after it starts, from the client's scheduled tasks;
 * the broker then tells the group's members to rebalance, and the client's {@code RebalanceService} does so at most
 * once per {@code rocketmq.client.rebalance.minInterval} milliseconds (a system property the client reads once; 1000
 * by default), counted from the client's creation. So a consumer owns nothing for about a second.
 *
 * <p>With that property below 1000 (an advanced setting, e.g. {@code -Drocketmq.client.rebalance.minInterval=100} in
 * {@code JAVA_OPTS}; tests use it), {@link #hasten} sends the first heartbeat at once and wakes the rebalance, so the
 * queues are owned after that interval. The same interval also spaces every later rebalance, and a group whose
 * members come and go (crashes, restarts) then rebalances that much more often. Stateless.
 */
final class FirstRebalance {

    /** The client's system property: the least time between two rebalances of one client, in milliseconds. */
    static final String MIN_INTERVAL_PROPERTY = "rocketmq.client.rebalance.minInterval";
    private static final long CLIENT_DEFAULT_MILLIS = 1000;

    private static final Logger log = LoggerFactory.getLogger(FirstRebalance.class);

    private FirstRebalance() {
    }

    /** Whether the client's minimum rebalance interval is below the second its first heartbeat waits. */
    static boolean enabled() {
        try {
            return Long.parseLong(System.getProperty(MIN_INTERVAL_PROPERTY, Long.toString(CLIENT_DEFAULT_MILLIS)))
                    < CLIENT_DEFAULT_MILLIS;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /**
     * If {@link #enabled()}: sends the started consumer's first heartbeat now, then wakes its rebalance. A failed
     * heartbeat is left to the client's own, a second later.
     */
    static void hasten(DefaultLitePullConsumer consumer) {
        if (!enabled()) {
            return;
        }
        MQClientInstance client = MQClientManager.getInstance().getFactoryTable().get(consumer.buildMQClientId());
        if (client == null) {
            return;
        }
        try {
            client.sendHeartbeatToAllBrokerWithLock();
        } catch (RuntimeException e) {
            log.debug("The first heartbeat of RocketMQ client {} failed: {}", client.getClientId(), e.getMessage());
        }
        client.rebalanceImmediately();
    }
}
