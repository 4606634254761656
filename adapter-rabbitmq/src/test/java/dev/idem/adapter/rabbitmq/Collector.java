package dev.idem.adapter.rabbitmq;

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

/** A subscription whose deliveries a test takes one by one, unsettled. */
final class Collector implements AutoCloseable {

    final BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
    final Subscription subscription;

    Collector(BrokerAdapter adapter, String queue, int maxInFlight, String deadLetter) {
        subscription = adapter.subscribe(new SubscriptionRequest("test", queue, maxInFlight, deadLetter),
                received::addAll);
    }

    Collector(BrokerAdapter adapter, String queue) {
        this(adapter, queue, 100, null);
    }

    Delivery next() throws InterruptedException {
        Delivery d = received.poll(30, TimeUnit.SECONDS);
        assertThat(d).as("a delivery within 30s").isNotNull();
        return d;
    }

    /** Publishes a sentinel and asserts it is the next delivery (acked): nothing else was waiting. */
    void expectOnlySentinel(BrokerAdapter publisher, String queue) throws InterruptedException {
        String marker = "sentinel-" + UUID.randomUUID();
        publisher.publish(queue, message(marker));
        Delivery d = next();
        assertThat(text(d)).as("the next delivery is the sentinel, nothing else").isEqualTo(marker);
        d.ack();
    }

    static OutboundMessage message(String body) {
        return new OutboundMessage(null, null, Map.of(), body.getBytes(StandardCharsets.UTF_8));
    }

    static String text(Delivery d) {
        return new String(d.message().payload(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        subscription.close();
    }
}
