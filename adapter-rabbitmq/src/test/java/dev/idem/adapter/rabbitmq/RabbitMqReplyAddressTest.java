package dev.idem.adapter.rabbitmq;

import static dev.idem.adapter.rabbitmq.Collector.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Request/reply on RabbitMQ: a request's {@code reply_to} and {@code correlation_id} properties become
 * {@link InboundMessage#replyTo()}, and a published reply's {@link ReplyAddress#CORRELATION_ID_HEADER} becomes the
 * {@code correlation_id} property, never a header.
 */
class RabbitMqReplyAddressTest {

    private final List<BrokerAdapter> adapters = new ArrayList<>();
    private final List<String> queues = new ArrayList<>();

    @BeforeAll
    static void locateBroker() {
        RabbitMqTestBroker.url();
    }

    @BeforeEach
    void reset() {
        queues.clear();
    }

    @AfterEach
    void cleanUp() {
        adapters.forEach(BrokerAdapter::close);
        queues.forEach(RabbitMqTestBroker::delete);
    }

    private BrokerAdapter adapter() {
        BrokerAdapter adapter = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config());
        adapters.add(adapter);
        return adapter;
    }

    private String queue(String prefix) {
        String queue = RabbitMqTestBroker.uniqueQueue(prefix);
        RabbitMqTestBroker.declare(queue);
        queues.add(queue);
        return queue;
    }

    /** Publishes a request with the raw client, with the reply_to and correlation_id properties given (or none). */
    private static void publishRequest(String queue, String body, String replyTo, String correlationId) {
        RabbitMqTestBroker.onChannel(ch -> {
            ch.confirmSelect();
            ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().deliveryMode(2).replyTo(replyTo)
                    .correlationId(correlationId).build(), body.getBytes(StandardCharsets.UTF_8));
            try {
                ch.waitForConfirmsOrDie(10_000);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return null;
        });
    }

    @Test
    void aRequestsReplyToAndCorrelationIdBecomeItsReplyAddress() throws Exception {
        String requests = queue("idem-requests");
        publishRequest(requests, "with-both", "replies-1", "corr-42");
        publishRequest(requests, "no-correlation", "replies-2", null);
        publishRequest(requests, "correlation-only", null, "corr-43");
        publishRequest(requests, "plain", null, null);

        BrokerAdapter adapter = adapter();
        try (Collector c = new Collector(adapter, requests)) {
            InboundMessage withBoth = next(c, "with-both");
            assertThat(withBoth.replyTo()).isEqualTo(ReplyAddress.of("replies-1", "corr-42"));
            assertThat(withBoth.replyTo().destination()).isEqualTo("replies-1");
            assertThat(withBoth.replyTo().correlationId()).isEqualTo("corr-42".getBytes(StandardCharsets.UTF_8));

            InboundMessage noCorrelation = next(c, "no-correlation");
            assertThat(noCorrelation.replyTo().destination()).isEqualTo("replies-2");
            assertThat(noCorrelation.replyTo().correlationId()).isEmpty();

            assertThat(next(c, "correlation-only").replyTo()).as("a correlation ID alone asks for no reply").isNull();
            assertThat(next(c, "plain").replyTo()).isNull();
            c.expectOnlySentinel(adapter, requests);
        }
    }

    private static InboundMessage next(Collector c, String expectedBody) throws InterruptedException {
        Delivery d = c.next();
        assertThat(text(d)).isEqualTo(expectedBody);
        d.ack();
        return d.message();
    }

    @Test
    void publishTurnsTheCorrelationHeaderIntoTheCorrelationIdPropertyAndDropsTheHeader() {
        String replies = queue("idem-replies");
        ReplyAddress address = ReplyAddress.of(replies, "corr-\u00e9-7");
        adapter().publish(replies, new OutboundMessage("reply-1", null,
                Map.of(ReplyAddress.CORRELATION_ID_HEADER, address.correlationHeader(), "tenant", "acme"),
                "pong".getBytes(StandardCharsets.UTF_8)));

        GetResponse reply = RabbitMqTestBroker.get(replies);
        assertThat(reply).isNotNull();
        assertThat(new String(reply.getBody(), StandardCharsets.UTF_8)).isEqualTo("pong");
        assertThat(reply.getProps().getCorrelationId()).isEqualTo("corr-\u00e9-7");
        assertThat(reply.getProps().getMessageId()).isEqualTo("reply-1");
        assertThat(reply.getProps().getHeaders()).containsKey("tenant")
                .doesNotContainKey(ReplyAddress.CORRELATION_ID_HEADER);

        adapter().publish(replies, new OutboundMessage(null, null, Map.of("tenant", "acme"), new byte[0]));
        GetResponse plain = RabbitMqTestBroker.get(replies);
        assertThat(plain).isNotNull();
        assertThat(plain.getProps().getCorrelationId()).as("no correlation header, no correlation ID").isNull();
    }

    @Test
    void aReplyToTheReplyToOfARequestReachesTheRequestersExclusiveQueue() throws Exception {
        String requests = queue("idem-rpc");
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(RabbitMqTestBroker.url());
        try (Connection requester = factory.newConnection("idem-test-requester");
                Channel channel = requester.createChannel()) {
            // The classic RPC client: a server-named, exclusive, auto-delete reply queue.
            String replyQueue = channel.queueDeclare().getQueue();
            BlockingQueue<GetResponse> replies = new LinkedBlockingQueue<>();
            channel.basicConsume(replyQueue, true, (tag, m) -> replies.add(
                    new GetResponse(m.getEnvelope(), m.getProperties(), m.getBody(), 0)), tag -> { });
            channel.basicPublish("", requests, new AMQP.BasicProperties.Builder().replyTo(replyQueue)
                    .correlationId("rpc-1").build(), "ping".getBytes(StandardCharsets.UTF_8));

            BrokerAdapter adapter = adapter();
            try (Collector c = new Collector(adapter, requests)) {
                Delivery request = c.next();
                ReplyAddress replyTo = request.message().replyTo();
                assertThat(replyTo).isEqualTo(ReplyAddress.of(replyQueue, "rpc-1"));
                adapter.publish(replyTo.destination(), new OutboundMessage(null, null,
                        Map.of(ReplyAddress.CORRELATION_ID_HEADER, replyTo.correlationHeader()),
                        "pong".getBytes(StandardCharsets.UTF_8)));
                request.ack();
            }

            GetResponse reply = replies.poll(10, TimeUnit.SECONDS);
            assertThat(reply).as("the reply within 10s").isNotNull();
            assertThat(new String(reply.getBody(), StandardCharsets.UTF_8)).isEqualTo("pong");
            assertThat(reply.getProps().getCorrelationId()).isEqualTo("rpc-1");
            Map<String, Object> headers = reply.getProps().getHeaders();
            assertThat(headers == null ? Map.of() : headers).doesNotContainKey(ReplyAddress.CORRELATION_ID_HEADER);
        }
    }

    @Test
    void aReplyToADirectReplyToRequestReachesTheRequester() throws Exception {
        String requests = queue("idem-rpc-direct");
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(RabbitMqTestBroker.url());
        try (Connection requester = factory.newConnection("idem-test-direct-requester");
                Channel channel = requester.createChannel()) {
            // Direct reply-to, as RabbitTemplate and the Java client's RpcClient use by default: the broker rewrites
            // reply_to into a pseudo-queue amq.rabbitmq.reply-to.<token> that routes to this channel's consumer.
            BlockingQueue<GetResponse> replies = new LinkedBlockingQueue<>();
            channel.basicConsume("amq.rabbitmq.reply-to", true, (tag, m) -> replies.add(
                    new GetResponse(m.getEnvelope(), m.getProperties(), m.getBody(), 0)), tag -> { });
            channel.basicPublish("", requests, new AMQP.BasicProperties.Builder().replyTo("amq.rabbitmq.reply-to")
                    .correlationId("rpc-2").build(), "ping".getBytes(StandardCharsets.UTF_8));

            BrokerAdapter adapter = adapter();
            try (Collector c = new Collector(adapter, requests)) {
                Delivery request = c.next();
                ReplyAddress replyTo = request.message().replyTo();
                assertThat(replyTo.destination()).startsWith("amq.rabbitmq.reply-to.");
                assertThat(replyTo.correlationId()).isEqualTo("rpc-2".getBytes(StandardCharsets.UTF_8));
                adapter.publish(replyTo.destination(), new OutboundMessage(null, null,
                        Map.of(ReplyAddress.CORRELATION_ID_HEADER, replyTo.correlationHeader()),
                        "pong".getBytes(StandardCharsets.UTF_8)));
                request.ack();
            }

            GetResponse reply = replies.poll(10, TimeUnit.SECONDS);
            assertThat(reply).as("the reply within 10s").isNotNull();
            assertThat(new String(reply.getBody(), StandardCharsets.UTF_8)).isEqualTo("pong");
            assertThat(reply.getProps().getCorrelationId()).isEqualTo("rpc-2");
        }
    }
}
