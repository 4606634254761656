package dev.idem.adapter.activemq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** Collects the deliveries of one subscription, unsettled, for tests. */
final class Inbox implements AutoCloseable {

    private final BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
    private final Subscription subscription;

    Inbox(BrokerAdapter adapter, String pipeline, String source, String deadLetter) {
        subscription = adapter.subscribe(new SubscriptionRequest(pipeline, source, 100, deadLetter), received::addAll);
    }

    Delivery next() throws InterruptedException {
        Delivery d = received.poll(30, TimeUnit.SECONDS);
        assertThat(d).as("a delivery within 30s").isNotNull();
        return d;
    }

    /** Publishes a sentinel and asserts it is the next delivery (acking it): nothing else was waiting. */
    void expectOnlySentinel(BrokerAdapter publisher, String destination) throws InterruptedException {
        String marker = "sentinel-" + UUID.randomUUID();
        publisher.publish(destination, message(marker, Map.of()));
        Delivery d = next();
        assertThat(text(d)).as("the next delivery is the sentinel").isEqualTo(marker);
        d.ack();
    }

    static OutboundMessage message(String body, Map<String, String> headers) {
        return new OutboundMessage(null, null, headers, body.getBytes(StandardCharsets.UTF_8));
    }

    static String text(Delivery d) {
        return new String(d.message().payload(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        subscription.close();
    }
}
