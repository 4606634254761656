package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
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
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Request/reply on Kafka as Spring Kafka's {@code ReplyingKafkaTemplate} does it: a request's
 * {@code kafka_replyTopic} and {@code kafka_correlationId} headers become {@link InboundMessage#replyTo()}, the
 * correlation ID's bytes exactly as sent, and a published reply's {@link ReplyAddress#CORRELATION_ID_HEADER}
 * becomes a {@code kafka_correlationId} header with those bytes, never a header of its own.
 */
class KafkaReplyAddressTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Sixteen bytes as a UUID's, and no UTF-8: a lone continuation byte, 0xFF, 0xFE, a NUL. */
    private static final byte[] CORRELATION = {(byte) 0x80, (byte) 0xFF, (byte) 0xFE, 0x00, (byte) 0xC3, 0x28,
            (byte) 0xA0, (byte) 0xA1, (byte) 0xE2, 0x28, (byte) 0xA1, (byte) 0xF0, 0x28, (byte) 0x8C, (byte) 0xBC,
            0x7F};

    private final EmbeddedKafka kafka = EmbeddedKafka.shared();
    private final List<String> topics = new ArrayList<>();
    private KafkaAdapter adapter;

    @BeforeEach
    void createAdapter() {
        adapter = KafkaTestSupport.adapter(KafkaTestSupport.config());
    }

    @AfterEach
    void cleanUp() {
        adapter.close();
        topics.forEach(kafka::deleteTopic);
    }

    private String topic(String prefix) {
        String name = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(name, 1);
        topics.add(name);
        return name;
    }

    /** Sends records with Kafka's own producer, headers given as name, value, name, value... */
    private void produce(String topic, String body, Object... headers) {
        Map<String, Object> props = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, body.getBytes(StandardCharsets.UTF_8));
            for (int i = 0; i < headers.length; i += 2) {
                Object value = headers[i + 1];
                record.headers().add((String) headers[i],
                        value instanceof byte[] b ? b : ((String) value).getBytes(StandardCharsets.UTF_8));
            }
            producer.send(record).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("Could not produce to " + topic, e);
        }
    }

    /** Every record of partition 0 of {@code topic} with Kafka's own consumer, until {@code count} came. */
    private List<ConsumerRecord<byte[], byte[]>> consume(String topic, int count) {
        Map<String, Object> props = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (records.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            }
        }
        assertThat(records).as("%d records in %s within %s", count, topic, WAIT).hasSize(count);
        return records;
    }

    private static byte[] header(ConsumerRecord<?, ?> record, String name) {
        Header h = record.headers().lastHeader(name);
        return h == null ? null : h.value();
    }

    @Test
    void aRequestsReplyTopicAndCorrelationBytesBecomeItsReplyAddressAndTheReplyCarriesThemBack() throws Exception {
        String requests = topic("idem-requests");
        String replies = topic("idem-replies");
        produce(requests, "request", "kafka_replyTopic", replies, "kafka_correlationId", CORRELATION,
                "tenant", "acme");
        produce(requests, "reply-topic-only", "kafka_replyTopic", replies);
        produce(requests, "correlation-only", "kafka_correlationId", CORRELATION);
        produce(requests, "plain");

        BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        ReplyAddress replyTo;
        try (Subscription s = adapter.subscribe(new SubscriptionRequest("replier", requests, 100, null),
                received::addAll)) {
            InboundMessage request = next(received, "request");
            replyTo = request.replyTo();
            assertThat(replyTo).isNotNull();
            assertThat(replyTo.destination()).isEqualTo(replies);
            assertThat(replyTo.correlationId()).as("non-UTF-8 bytes survive exactly").isEqualTo(CORRELATION);
            assertThat(request.headers()).containsEntry("tenant", "acme");

            InboundMessage topicOnly = next(received, "reply-topic-only");
            assertThat(topicOnly.replyTo().destination()).isEqualTo(replies);
            assertThat(topicOnly.replyTo().correlationId()).isEmpty();

            assertThat(next(received, "correlation-only").replyTo()).as("no reply topic, no reply").isNull();
            assertThat(next(received, "plain").replyTo()).isNull();
        }

        adapter.publish(replyTo.destination(), new OutboundMessage("reply-1", "k",
                Map.of(ReplyAddress.CORRELATION_ID_HEADER, replyTo.correlationHeader(), "tenant", "acme"),
                "response".getBytes(StandardCharsets.UTF_8)));
        adapter.publish(replies, new OutboundMessage(null, null, Map.of("tenant", "acme"), new byte[0]));

        List<ConsumerRecord<byte[], byte[]>> records = consume(replies, 2);
        ConsumerRecord<byte[], byte[]> reply = records.get(0);
        assertThat(new String(reply.value(), StandardCharsets.UTF_8)).isEqualTo("response");
        assertThat(header(reply, "kafka_correlationId")).as("the request's bytes, exactly").isEqualTo(CORRELATION);
        assertThat(header(reply, ReplyAddress.CORRELATION_ID_HEADER)).isNull();
        assertThat(reply.headers().headers("kafka_correlationId")).hasSize(1);
        assertThat(header(reply, "tenant")).isEqualTo("acme".getBytes(StandardCharsets.UTF_8));
        assertThat(header(reply, "message-id")).isEqualTo("reply-1".getBytes(StandardCharsets.UTF_8));
        assertThat(new String(reply.key(), StandardCharsets.UTF_8)).isEqualTo("k");

        ConsumerRecord<byte[], byte[]> plain = records.get(1);
        assertThat(header(plain, "kafka_correlationId")).as("no correlation header, no correlation ID").isNull();
    }

    private static InboundMessage next(BlockingQueue<Delivery> received, String expectedBody)
            throws InterruptedException {
        Delivery d = received.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(d).as("a delivery within %s", WAIT).isNotNull();
        assertThat(new String(d.message().payload(), StandardCharsets.UTF_8)).isEqualTo(expectedBody);
        d.ack();
        return d.message();
    }

    @Test
    void anEmptyCorrelationIdIsPublishedAsAnEmptyCorrelationHeaderValue() {
        String replies = topic("idem-replies");
        ReplyAddress noCorrelation = new ReplyAddress(replies, null);
        adapter.publish(replies, new OutboundMessage(null, null,
                Map.of(ReplyAddress.CORRELATION_ID_HEADER, noCorrelation.correlationHeader()), new byte[0]));
        ConsumerRecord<byte[], byte[]> reply = consume(replies, 1).get(0);
        assertThat(header(reply, "kafka_correlationId")).isEmpty();
        assertThat(header(reply, ReplyAddress.CORRELATION_ID_HEADER)).isNull();
    }
}
