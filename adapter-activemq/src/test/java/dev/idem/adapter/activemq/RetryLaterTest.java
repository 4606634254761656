package dev.idem.adapter.activemq;

import static dev.idem.adapter.activemq.Inbox.message;
import static dev.idem.adapter.activemq.Inbox.text;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Retry-later recovers the JMS session, which would redeliver every unacknowledged message of it: these tests
 * guard that deliveries still in flight in the same session are neither redelivered, lost nor acknowledged by
 * another delivery's retry.
 */
class RetryLaterTest {

    private final List<BrokerAdapter> adapters = new ArrayList<>();
    private String queue;

    @BeforeEach
    void newQueue() {
        queue = "retry-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @AfterEach
    void closeAdapters() {
        adapters.forEach(BrokerAdapter::close);
    }

    private BrokerAdapter adapter() {
        BrokerAdapter a = TestBroker.shared().adapter();
        adapters.add(a);
        return a;
    }

    private List<Delivery> publishAndReceive(BrokerAdapter adapter, Inbox inbox, int n) throws InterruptedException {
        for (int i = 0; i < n; i++) {
            adapter.publish(queue, message("m" + i, Map.of("message-id", "id-" + i)));
        }
        List<Delivery> received = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            received.add(inbox.next());
        }
        assertThat(received).extracting(Inbox::text).containsExactly("m0", "m1", "m2", "m3", "m4");
        return received;
    }

    @Test
    void retryWaitsForTheSessionsOtherDeliveriesAndRedeliversOnlyTheRetriedOne() throws Exception {
        BrokerAdapter adapter = adapter();
        try (Inbox inbox = new Inbox(adapter, "retry", queue, null)) {
            List<Delivery> d = publishAndReceive(adapter, inbox, 5);
            d.get(1).retryLater(Duration.ZERO);
            d.get(3).retryLater(Duration.ofSeconds(5));
            d.get(0).ack();
            d.get(2).ack();
            d.get(4).ack();

            Delivery again1 = inbox.next();
            Delivery again3 = inbox.next();
            assertThat(List.of(text(again1), text(again3))).containsExactly("m1", "m3");
            for (Delivery again : List.of(again1, again3)) {
                assertThat(again.message().deliveryCount()).isEqualTo(2);
                assertThat(again.message().redelivered()).isTrue();
                assertThat(again.message().headers()).containsKey("message-id");
            }
            assertThat(again1.message().brokerMessageId()).isEqualTo(d.get(1).message().brokerMessageId());
            again1.ack();
            again3.ack();
            inbox.expectOnlySentinel(adapter, queue);
        }
    }

    @Test
    void deliveriesInFlightDuringARetryAreNeitherAckedNorLost() throws Exception {
        BrokerAdapter first = adapter();
        Inbox inbox = new Inbox(first, "retry", queue, null);
        List<Delivery> d = publishAndReceive(first, inbox, 5);
        d.get(0).ack();
        d.get(2).retryLater(Duration.ZERO);
        d.get(4).ack();
        // m1 and m3 are still being worked on when the consumer goes away.
        inbox.close();
        first.close();

        BrokerAdapter second = adapter();
        try (Inbox again = new Inbox(second, "retry", queue, null)) {
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Delivery redelivered = again.next();
                bodies.add(text(redelivered));
                redelivered.ack();
            }
            assertThat(bodies).containsExactlyInAnyOrder("m1", "m2", "m3");
            again.expectOnlySentinel(second, queue);
        }
    }

    @Test
    void settlingTheOthersAfterTheRecoveryDoesNotTouchTheRedeliveredCopy() throws Exception {
        BrokerAdapter adapter = adapter();
        try (Inbox inbox = new Inbox(adapter, "retry", queue, null)) {
            List<Delivery> d = publishAndReceive(adapter, inbox, 5);
            d.get(0).retryLater(Duration.ZERO);
            for (int i = 1; i < 5; i++) {
                d.get(i).ack();
            }
            Delivery again = inbox.next();
            assertThat(text(again)).isEqualTo("m0");
            again.retryLater(Duration.ZERO);
            Delivery third = inbox.next();
            assertThat(text(third)).isEqualTo("m0");
            assertThat(third.message().deliveryCount()).isEqualTo(3);
            third.ack();
            inbox.expectOnlySentinel(adapter, queue);
        }
    }
}
