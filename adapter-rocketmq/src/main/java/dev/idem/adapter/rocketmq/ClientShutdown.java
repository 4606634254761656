package dev.idem.adapter.rocketmq;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shuts a RocketMQ client (producer or consumer) down on a daemon thread of its own, so that closing a subscription
 * or the adapter does not wait for it: the client's shutdown stops its threads, unregisters from the brokers and
 * closes its connections, which can take seconds. Callers commit what they must first; what the client's shutdown
 * writes of its own is the offset store's content, which only ever holds finished offsets. A JVM that ends meanwhile
 * closes the connections, and the brokers drop the client as they would after a crash. Stateless; any thread.
 */
final class ClientShutdown {

    private static final Logger log = LoggerFactory.getLogger(ClientShutdown.class);

    private ClientShutdown() {
    }

    /** @param what the client, for the thread's name and a failure's warning */
    static void inBackground(String what, Runnable shutdown) {
        Thread thread = new Thread(() -> {
            try {
                shutdown.run();
            } catch (RuntimeException e) {
                log.warn("Shutting down the RocketMQ {} failed: {}", what, e.getMessage());
            }
        }, "idem-rocketmq-shutdown-" + what.replace(' ', '-'));
        thread.setDaemon(true);
        thread.start();
    }
}
