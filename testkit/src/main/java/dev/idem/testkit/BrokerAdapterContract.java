package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link BrokerAdapter} must pass against a real broker: what it delivers, and
 * what ack, retry-later and dead-letter do to a message, including across a consumer restart and a
 * consumer that dies without settling.
 *
 * <p>An adapter's test extends this class and implements {@link #createAdapter()}, returning a new
 * adapter connected to the broker under test each time it is called (tests call it again to simulate
 * a restarted consumer). Override {@link #newDestination()} when the broker needs destinations
 * declared or named a certain way, and {@link #deleteDestination(String)} to clean up.
 *
 * <p>Absence is asserted with a sentinel: after the action, a marker message is published and
 * received, and nothing else must arrive before it. No test waits a fixed time for "nothing".
 */
public abstract class BrokerAdapterContract {

    private final List<BrokerAdapter> adapters = new ArrayList<>();
    private final List<String> destinations = new ArrayList<>();
    /** The destination the current test consumes from. */
    protected String source;

    /** A new adapter connected to the broker under test. Closed by the contract after each test. */
    protected abstract BrokerAdapter createAdapter();

    /** A fresh destination name for one test; unique so tests on a shared broker do not collide. */
    protected String newDestination() {
        return "idem-contract-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** A fresh destination that can hold dead letters to browse; by default {@link #newDestination()}. */
    protected String newDeadLetterDestination() {
        return newDestination();
    }

    /** Removes a destination a test used; by default nothing. */
    protected void deleteDestination(String destination) {
    }

    /** How long to wait for a message that must arrive. */
    protected Duration receiveTimeout() {
        return Duration.ofSeconds(30);
    }

    /** Subscribes to {@code destination}, for subclasses that must prepare it before publishing. */
    protected void prepareDestination(BrokerAdapter adapter, String destination) {
    }

    @BeforeEach
    void createSource() {
        source = track(newDestination());
    }

    @AfterEach
    void closeAdapters() {
        for (BrokerAdapter adapter : adapters) {
            adapter.close();
        }
        adapters.clear();
        for (String d : destinations) {
            deleteDestination(d);
        }
        destinations.clear();
    }

    private String track(String destination) {
        destinations.add(destination);
        return destination;
    }

    /** An adapter closed after the test. */
    protected final BrokerAdapter adapter() {
        BrokerAdapter adapter = createAdapter();
        adapters.add(adapter);
        return adapter;
    }

    /** Collects deliveries of one subscription, unsettled, in arrival order. */
    protected final class Receiver implements AutoCloseable {
        final BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        final Subscription subscription;

        Receiver(BrokerAdapter adapter, String destination, String deadLetter) {
            subscription = adapter.subscribe(new SubscriptionRequest("contract-" + destination, destination, 100,
                    deadLetter), received::addAll);
        }

        /** The next delivery; fails the test if none arrives in time. */
        public Delivery next() throws InterruptedException {
            Delivery d = received.poll(receiveTimeout().toMillis(), TimeUnit.MILLISECONDS);
            assertThat(d).as("a delivery within %s", receiveTimeout()).isNotNull();
            return d;
        }

        /**
         * Publishes a sentinel through {@code publisher} and asserts it is the next delivery, acking it:
         * proves nothing else was waiting.
         */
        public void expectOnlySentinel(BrokerAdapter publisher, String destination) throws InterruptedException {
            String marker = "sentinel-" + UUID.randomUUID();
            publisher.publish(destination, message(marker, null, Map.of()));
            Delivery d = next();
            assertThat(text(d.message())).as("the next delivery is the sentinel, nothing else").isEqualTo(marker);
            d.ack();
        }

        @Override
        public void close() {
            subscription.close();
        }
    }

    protected final Receiver receive(BrokerAdapter adapter, String destination) {
        return new Receiver(adapter, destination, null);
    }

    protected static OutboundMessage message(String body, String key, Map<String, String> headers) {
        return new OutboundMessage(null, key, headers, body.getBytes(StandardCharsets.UTF_8));
    }

    protected static String text(InboundMessage m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    @Test
    void publishedMessagesAreDeliveredWithPayloadHeadersAndKeyIntact() throws Exception {
        BrokerAdapter adapter = adapter();
        prepareDestination(adapter, source);
        adapter.publish(source, message("first ✓", "order-1", Map.of("message-id", "id-1", "tenant", "acme")));
        adapter.publish(source, message("second", "order-2", Map.of("message-id", "id-2")));
        try (Receiver receiver = receive(adapter, source)) {
            InboundMessage first = receiver.next().message();
            InboundMessage second = receiver.next().message();
            assertThat(text(first)).isEqualTo("first ✓");
            assertThat(first.key()).isEqualTo("order-1");
            assertThat(first.headers()).containsEntry("message-id", "id-1").containsEntry("tenant", "acme");
            assertThat(first.source()).isEqualTo(source);
            assertThat(first.brokerMessageId()).isNotBlank();
            assertThat(first.redelivered()).isFalse();
            assertThat(text(second)).isEqualTo("second");
            assertThat(second.headers()).containsEntry("message-id", "id-2");
            assertThat(second.brokerMessageId()).isNotEqualTo(first.brokerMessageId());
        }
    }

    /** Whether the adapter reports {@link Subscription#backlog()} (built-in adapters do); if not, it must report none. */
    protected boolean reportsBacklog() {
        return true;
    }

    @Test
    void backlogShowsWhatTheBrokerStillHoldsAndDrainsToZeroOnceAcked() throws Exception {
        BrokerAdapter adapter = adapter();
        prepareDestination(adapter, source);
        int published = 30;
        for (int i = 0; i < published; i++) {
            adapter.publish(source, message("m-" + i, null, Map.of()));
        }
        BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        try (Subscription subscription = adapter.subscribe(new SubscriptionRequest("contract-" + source,
                source, 1, null), received::addAll)) {
            if (!reportsBacklog()) {
                Delivery d = received.poll(receiveTimeout().toMillis(), TimeUnit.MILLISECONDS);
                assertThat(d).isNotNull();
                assertThat(subscription.backlog()).as("an adapter that cannot tell reports nothing").isEmpty();
                return;
            }
            // Nothing acked yet: the broker still holds (nearly) all of it, whatever its prefetch.
            await().atMost(receiveTimeout()).until(() ->
                    subscription.backlog().values().stream().mapToLong(Long::longValue).sum() >= published - 10);
            for (int acked = 0; acked < published; acked++) {
                Delivery d = received.poll(receiveTimeout().toMillis(), TimeUnit.MILLISECONDS);
                assertThat(d).as("delivery %d of %d", acked + 1, published).isNotNull();
                d.ack();
            }
            await().atMost(receiveTimeout()).until(() ->
                    subscription.backlog().values().stream().mapToLong(Long::longValue).sum() == 0
                            && !subscription.backlog().isEmpty());
        }
    }

    @Test
    void ackedMessageIsNotDeliveredAgain() throws Exception {
        BrokerAdapter adapter = adapter();
        prepareDestination(adapter, source);
        adapter.publish(source, message("once", null, Map.of()));
        try (Receiver receiver = receive(adapter, source)) {
            receiver.next().ack();
            receiver.expectOnlySentinel(adapter, source);
        }
    }

    @Test
    void retryLaterRedeliversWithRedeliveryFlagOrCount() throws Exception {
        BrokerAdapter adapter = adapter();
        prepareDestination(adapter, source);
        adapter.publish(source, message("again", "k", Map.of("message-id", "retry-1")));
        try (Receiver receiver = receive(adapter, source)) {
            Delivery first = receiver.next();
            first.retryLater(Duration.ZERO);
            Delivery second = receiver.next();
            assertThat(text(second.message())).isEqualTo("again");
            assertThat(second.message().headers()).containsEntry("message-id", "retry-1");
            assertThat(second.message().redelivered() || second.message().deliveryCount() > 1)
                    .as("redelivered flag or delivery count tells it came again").isTrue();
            second.ack();
            receiver.expectOnlySentinel(adapter, source);
        }
    }

    @Test
    void deadLetterMovesMessageToDeadLetterDestination() throws Exception {
        BrokerAdapter adapter = adapter();
        String deadLetters = track(newDestination());
        prepareDestination(adapter, source);
        prepareDestination(adapter, deadLetters);
        adapter.publish(source, message("poison", "k", Map.of("message-id", "dl-1")));
        try (Receiver receiver = new Receiver(adapter, source, deadLetters)) {
            receiver.next().deadLetter(new DeadLetterReason("handler-failed", "boom", 3, "contract"));
            try (Receiver dlq = receive(adapter, deadLetters)) {
                InboundMessage dead = dlq.next().message();
                assertThat(text(dead)).isEqualTo("poison");
                assertThat(dead.headers()).containsEntry("message-id", "dl-1");
            }
            receiver.expectOnlySentinel(adapter, source);
        }
    }

    @Test
    void ackedMessageIsNotRedeliveredAfterConsumerRestart() throws Exception {
        BrokerAdapter first = adapter();
        prepareDestination(first, source);
        first.publish(source, message("acked", null, Map.of()));
        first.publish(source, message("unacked", null, Map.of()));
        try (Receiver receiver = receive(first, source)) {
            Delivery acked = receiver.next();
            assertThat(text(acked.message())).isEqualTo("acked");
            acked.ack();
            assertThat(text(receiver.next().message())).isEqualTo("unacked");
        }
        first.close();

        BrokerAdapter restarted = adapter();
        try (Receiver receiver = receive(restarted, source)) {
            Delivery again = receiver.next();
            assertThat(text(again.message())).isEqualTo("unacked");
            again.ack();
            receiver.expectOnlySentinel(restarted, source);
        }
    }

    @Test
    void unackedDeliveriesAreRedeliveredAfterConsumerDies() throws Exception {
        BrokerAdapter doomed = adapter();
        prepareDestination(doomed, source);
        for (int i = 0; i < 5; i++) {
            doomed.publish(source, message("m" + i, null, Map.of()));
        }
        Receiver receiver = receive(doomed, source);
        for (int i = 0; i < 5; i++) {
            receiver.next();
        }
        doomed.close();

        BrokerAdapter survivor = adapter();
        List<String> bodies = new ArrayList<>();
        try (Receiver again = receive(survivor, source)) {
            for (int i = 0; i < 5; i++) {
                Delivery d = again.next();
                bodies.add(text(d.message()));
                d.ack();
            }
            again.expectOnlySentinel(survivor, source);
        }
        assertThat(bodies).containsExactlyInAnyOrder("m0", "m1", "m2", "m3", "m4");
    }

    /** Whether the adapter is a {@link DeadLetterBrowser} (built-in adapters are); if not, it must not claim to be. */
    protected boolean browses() {
        return true;
    }

    /**
     * A browse of a dead-letter destination takes nothing: two browses see the same messages at the same positions,
     * with their headers and the dead-letter reason; the page bound holds; and a consumer afterwards still gets every
     * message, and nothing else.
     */
    @Test
    void browseShowsDeadLettersAndLeavesEveryOneInPlace() throws Exception {
        BrokerAdapter adapter = adapter();
        if (!browses()) {
            assertThat(adapter).isNotInstanceOf(DeadLetterBrowser.class);
            return;
        }
        assertThat(adapter).isInstanceOf(DeadLetterBrowser.class);
        DeadLetterBrowser browser = (DeadLetterBrowser) adapter;
        String deadLetters = track(newDeadLetterDestination());
        prepareDestination(adapter, source);
        prepareDestination(adapter, deadLetters);
        int count = 3;
        for (int i = 0; i < count; i++) {
            adapter.publish(source, message("poison-" + i, "k", Map.of("message-id", "browse-" + i)));
        }
        try (Receiver receiver = new Receiver(adapter, source, deadLetters)) {
            for (int i = 0; i < count; i++) {
                receiver.next().deadLetter(new DeadLetterReason("handler-failed", "java.lang.IllegalStateException: "
                        + "boom " + i, i + 1, "contract"));
            }
        }
        String reader = "contract-browse-" + deadLetters;
        await().atMost(receiveTimeout()).until(() -> browser.browse(deadLetters, reader, 10).size() == count);
        List<BrowsedMessage> first = browser.browse(deadLetters, reader, 10);
        List<BrowsedMessage> second = browser.browse(deadLetters, reader, 10);
        assertThat(second).extracting(BrowsedMessage::position).doesNotHaveDuplicates();
        assertThat(second).extracting(b -> b.position() + "=" + text(b.message()))
                .as("a second browse sees the same messages at the same positions, in the same order")
                .containsExactlyElementsOf(first.stream().map(b -> b.position() + "=" + text(b.message())).toList());
        assertThat(second).extracting(b -> text(b.message()))
                .containsExactlyInAnyOrder("poison-0", "poison-1", "poison-2");
        for (BrowsedMessage b : second) {
            String n = text(b.message()).substring("poison-".length());
            assertThat(b.message().headers())
                    .containsEntry("message-id", "browse-" + n)
                    .containsEntry(DeadLetterReason.HEADER_CAUSE, "handler-failed")
                    .containsEntry(DeadLetterReason.HEADER_DETAIL, "java.lang.IllegalStateException: boom " + n)
                    .containsEntry(DeadLetterReason.HEADER_ATTEMPTS, Integer.toString(Integer.parseInt(n) + 1))
                    .containsEntry(DeadLetterReason.HEADER_PIPELINE, "contract");
        }
        List<BrowsedMessage> page = browser.browse(deadLetters, reader, 2);
        assertThat(page).as("the page bound holds").hasSize(2);
        assertThat(page).extracting(b -> b.position() + "=" + text(b.message()))
                .containsExactlyElementsOf(first.subList(0, 2).stream()
                        .map(b -> b.position() + "=" + text(b.message())).toList());
        assertThat(browser.browse(track(newDeadLetterDestination()), reader, 10)).as("a destination that does not exist")
                .isEmpty();

        List<String> consumed = new ArrayList<>();
        try (Receiver dlq = receive(adapter, deadLetters)) {
            for (int i = 0; i < count; i++) {
                Delivery d = dlq.next();
                consumed.add(text(d.message()));
                d.ack();
            }
            dlq.expectOnlySentinel(adapter, deadLetters);
        }
        assertThat(consumed).as("nothing was consumed, moved or dropped by the browses")
                .containsExactlyInAnyOrder("poison-0", "poison-1", "poison-2");
    }
}
