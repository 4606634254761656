package dev.idem.adapter.kafka;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * One adapter instance: a shared idempotent producer (publish, dead letters), an admin client for health
 * checks, and one {@link KafkaSubscription} (consumer thread) per subscribe call. Thread-safe.
 */
final class KafkaAdapter implements BrokerAdapter {

    /** The header {@link OutboundMessage#messageId()} travels in. */
    static final String MESSAGE_ID_HEADER = "message-id";

    private static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(5);

    private final KafkaSettings settings;
    private final KafkaProducer<byte[], byte[]> producer;
    private final Set<KafkaSubscription> subscriptions = ConcurrentHashMap.newKeySet();
    private Admin admin;
    private volatile boolean closed;

    KafkaAdapter(KafkaSettings settings) {
        this.settings = settings;
        try {
            this.producer = new KafkaProducer<>(settings.producer());
        } catch (KafkaException e) {
            throw new BrokerException("Cannot create the Kafka producer for " + settings.path() + ": "
                    + e.getMessage() + " (check " + settings.path() + ".client and the security settings)", false, e);
        }
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (closed) {
            throw new BrokerException("The Kafka adapter is closed; cannot subscribe to '" + request.source() + "'",
                    false);
        }
        String deadLetter = request.deadLetterDestination() != null ? request.deadLetterDestination()
                : request.source() + settings.deadLetterSuffix();
        KafkaSubscription subscription = new KafkaSubscription(settings, request, deadLetter, listener, this,
                subscriptions::remove);
        subscriptions.add(subscription);
        try {
            subscription.start();
        } catch (RuntimeException e) {
            subscriptions.remove(subscription);
            throw e;
        }
        return subscription;
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(message, "message");
        RecordHeaders headers = new RecordHeaders();
        message.headers().forEach((name, value) -> {
            if (!(message.messageId() != null && name.equals(MESSAGE_ID_HEADER))) {
                headers.add(name, utf8(value));
            }
        });
        if (message.messageId() != null) {
            headers.add(MESSAGE_ID_HEADER, utf8(message.messageId()));
        }
        send(new ProducerRecord<>(destination, null, message.key() == null ? null : utf8(message.key()),
                message.payload(), headers), "publish to '" + destination + "'");
    }

    /**
     * Sends one record and waits until the broker acknowledged it.
     *
     * @throws BrokerException if it was not acknowledged, retriable where Kafka says so
     */
    RecordMetadata send(ProducerRecord<byte[], byte[]> record, String what) {
        if (closed) {
            throw new BrokerException("Cannot " + what + ": the Kafka adapter is closed", false);
        }
        Duration wait = settings.sendWait();
        try {
            Future<RecordMetadata> sent = producer.send(record);
            return sent.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new BrokerException("Kafka did not acknowledge the " + what + ": " + cause.getMessage(),
                    cause instanceof RetriableException, cause);
        } catch (TimeoutException e) {
            throw new BrokerException("Kafka did not acknowledge the " + what + " within "
                    + ConfigKey.formatDuration(wait), true, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while waiting for Kafka to acknowledge the " + what, true, e);
        } catch (KafkaException e) {
            throw new BrokerException("Kafka refused the " + what + ": " + e.getMessage(),
                    e instanceof RetriableException, e);
        }
    }

    @Override
    public void checkHealth() {
        try {
            admin().describeCluster(new DescribeClusterOptions().timeoutMs((int) HEALTH_TIMEOUT.toMillis()))
                    .clusterId().get(HEALTH_TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            throw new BrokerException("Kafka at " + settings.common().get("bootstrap.servers")
                    + " did not answer a cluster description within " + ConfigKey.formatDuration(HEALTH_TIMEOUT)
                    + ": " + cause.getMessage(), true, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while checking Kafka's health", true, e);
        }
    }

    private synchronized Admin admin() {
        if (closed) {
            throw new BrokerException("The Kafka adapter is closed", false);
        }
        if (admin == null) {
            admin = Admin.create(settings.admin());
        }
        return admin;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (KafkaSubscription s : subscriptions.toArray(KafkaSubscription[]::new)) {
            s.close();
        }
        producer.close(Duration.ofSeconds(5));
        synchronized (this) {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The header map of a delivery, values decoded as UTF-8; for a repeated name the last value wins. */
    static Map<String, String> headers(Headers headers) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Header h : headers) {
            out.put(h.key(), h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8));
        }
        return out;
    }
}
