package dev.idem.adapter.activemq;

import static dev.idem.adapter.activemq.Inbox.text;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What a dead-lettered copy carries, and where it goes by default. */
class DeadLetterTest {

    private final BrokerAdapter adapter = TestBroker.shared().adapter();
    private final String queue = "dl-" + UUID.randomUUID().toString().substring(0, 8);

    @AfterEach
    void close() {
        adapter.close();
    }

    @Test
    void deadLetteredCopyGoesToTheQueuesDlqWithOriginalHeadersReasonAndOrigin() throws Exception {
        adapter.publish(queue, new OutboundMessage("mid-1", "order-7",
                Map.of("tenant", "acme", "JMSCorrelationID", "corr-1"), "poison".getBytes(StandardCharsets.UTF_8)));
        InboundMessage original;
        try (Inbox inbox = new Inbox(adapter, "payments", "queue://" + queue, null)) {
            Delivery d = inbox.next();
            original = d.message();
            d.deadLetter(new DeadLetterReason("handler-failed", "boom", 3, "payments"));
            inbox.expectOnlySentinel(adapter, queue);
        }
        try (Inbox dlq = new Inbox(adapter, "dlq-reader", queue + ".DLQ", null)) {
            Delivery dead = dlq.next();
            InboundMessage m = dead.message();
            assertThat(text(dead)).isEqualTo("poison");
            assertThat(m.key()).isEqualTo("order-7");
            assertThat(m.headers())
                    .containsEntry("tenant", "acme")
                    .containsEntry("message-id", "mid-1")
                    .containsEntry("JMSCorrelationID", "corr-1")
                    .containsEntry(DeadLetterReason.HEADER_CAUSE, "handler-failed")
                    .containsEntry(DeadLetterReason.HEADER_DETAIL, "boom")
                    .containsEntry(DeadLetterReason.HEADER_ATTEMPTS, "3")
                    .containsEntry(DeadLetterReason.HEADER_PIPELINE, "payments")
                    .containsEntry(DeadLetterReason.ORIGIN_SOURCE, "queue://" + queue)
                    .containsEntry(DeadLetterReason.ORIGIN_MESSAGE_ID, original.brokerMessageId());
            dead.ack();
        }
    }
}
