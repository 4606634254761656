package dev.idem.adapter.kafka;

import dev.idem.spi.Backlog;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * One adapter instance: a shared idempotent producer (publish, dead letters), an admin client for health
 * checks, and one {@link KafkaSubscription} (consumer thread) per subscribe call. Nothing connects before the
 * first subscribe or publish, which first checks that the cluster can be reached ({@link BootstrapProbe}).
 * Thread-safe.
 */
final class KafkaAdapter implements BrokerAdapter, DeadLetterBrowser {

    /** The header {@link OutboundMessage#messageId()} travels in. */
    static final String MESSAGE_ID_HEADER = "message-id";
    /** Spring Kafka's request/reply headers ({@code KafkaHeaders.REPLY_TOPIC}, {@code CORRELATION_ID}). */
    static final String REPLY_TOPIC_HEADER = "kafka_replyTopic";
    static final String CORRELATION_ID_HEADER = "kafka_correlationId";

    private static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(5);

    private final KafkaSettings settings;
    private final Duration connectTimeout;
    private final String connectTimeoutKey;
    private final Set<KafkaSubscription> subscriptions = ConcurrentHashMap.newKeySet();
    /** Why a subscription was fenced out of its group, by pipeline: reported by {@link #checkHealth()}. */
    private final Map<String, String> fenced = new ConcurrentHashMap<>();
    /** Guards the first contact with the cluster and the producer's creation; never held by {@link #close()}. */
    private final Object connecting = new Object();
    /** Created at the first send, once the cluster was reached: an idempotent producer connects at once. */
    private volatile KafkaProducer<byte[], byte[]> producer;
    private volatile boolean reachable;
    private Admin admin;
    private volatile boolean closed;

    /**
     * @param connectTimeout how long the first subscribe or publish waits for the cluster (see {@link BootstrapProbe})
     * @param connectTimeoutKey its config path, for messages
     * @throws BrokerException if kafka-clients rejects the producer's settings
     */
    KafkaAdapter(KafkaSettings settings, Duration connectTimeout, String connectTimeoutKey) {
        this.settings = settings;
        this.connectTimeout = connectTimeout;
        this.connectTimeoutKey = connectTimeoutKey;
        try {
            // What the producer, created at the first send, would reject: reported now, at start and by check.
            new ProducerConfig(settings.producer());
        } catch (KafkaException e) {
            throw producerRejected(e);
        }
    }

    private BrokerException producerRejected(KafkaException e) {
        return new BrokerException("Cannot create the Kafka producer for " + settings.path() + ": "
                + e.getMessage() + " (check " + settings.path() + ".client and the security settings)", false, e);
    }

    /**
     * Checks once, before any consumer or producer of this adapter talks to the cluster, that it can be reached;
     * after a failure the next call checks again.
     *
     * @throws BrokerException naming the bootstrap servers if they cannot be reached within the connect timeout
     */
    private void ensureReachable() {
        if (reachable) {
            return;
        }
        synchronized (connecting) {
            if (reachable) {
                return;
            }
            try {
                BootstrapProbe.check(settings, connectTimeout, connectTimeoutKey);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BrokerException("Interrupted while connecting to Kafka", true, e);
            }
            reachable = true;
        }
    }

    private KafkaProducer<byte[], byte[]> producer() {
        KafkaProducer<byte[], byte[]> p = producer;
        if (p == null) {
            synchronized (connecting) {
                if (producer == null) {
                    ensureReachable();
                    // Created on whichever thread sends first, often a pipeline worker whose context is the
                    // handler's loader: the client's classes (serializers, SASL callbacks) come from ours.
                    Thread thread = Thread.currentThread();
                    ClassLoader previous = thread.getContextClassLoader();
                    thread.setContextClassLoader(KafkaAdapter.class.getClassLoader());
                    try {
                        producer = new KafkaProducer<>(settings.producer());
                    } catch (KafkaException e) {
                        throw producerRejected(e);
                    } finally {
                        thread.setContextClassLoader(previous);
                    }
                }
                p = producer;
            }
        }
        if (closed) {
            // close() may have looked for the producer before it existed.
            p.close(Duration.ofSeconds(5));
            throw new BrokerException("The Kafka adapter is closed", false);
        }
        return p;
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (closed) {
            throw new BrokerException("The Kafka adapter is closed; cannot subscribe to '" + request.source() + "'",
                    false);
        }
        ensureReachable();
        String deadLetter = request.deadLetterDestination() != null ? request.deadLetterDestination()
                : request.source() + settings.deadLetterSuffix();
        KafkaSubscription subscription;
        synchronized (subscriptions) {
            // Chosen and registered together, so that two live consumers of one group never share an instance id.
            subscription = new KafkaSubscription(settings, request, instanceId(request.pipeline()), deadLetter,
                    listener, this, subscriptions::remove);
            subscriptions.add(subscription);
        }
        try {
            subscription.start();
        } catch (RuntimeException e) {
            subscriptions.remove(subscription);
            throw e;
        }
        return subscription;
    }

    /**
     * The {@code group.instance.id} of a new consumer of {@code pipeline}: {@code group-instance-id} itself, as each
     * pipeline has a group of its own; {@code <id>-2}, {@code <id>-3}... only while other subscriptions of the same
     * pipeline live in this adapter (the runtime subscribes each pipeline once), since one id in one group would
     * fence the other consumer out. {@code null} without {@code group-instance-id}.
     */
    private String instanceId(String pipeline) {
        String base = settings.groupInstanceId();
        if (base == null) {
            return null;
        }
        Set<String> taken = new HashSet<>();
        for (KafkaSubscription s : subscriptions) {
            if (s.pipeline().equals(pipeline) && s.groupInstanceId() != null) {
                taken.add(s.groupInstanceId());
            }
        }
        String id = base;
        for (int n = 2; taken.contains(id); n++) {
            id = base + "-" + n;
        }
        return id;
    }

    /** Called by a subscription whose consumer was fenced out of its group by another with its instance id. */
    void fenced(String pipeline, String why) {
        fenced.put(pipeline, why);
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(message, "message");
        RecordHeaders headers = new RecordHeaders();
        message.headers().forEach((name, value) -> {
            if (name.equals(ReplyAddress.CORRELATION_ID_HEADER)) {
                // A reply: the request's correlation ID, bytes as they came, where ReplyingKafkaTemplate looks.
                headers.add(CORRELATION_ID_HEADER, ReplyAddress.correlationFromHeader(value));
            } else if (!(message.messageId() != null && name.equals(MESSAGE_ID_HEADER))) {
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
            Future<RecordMetadata> sent = producer().send(record);
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

    /**
     * Fails if a consumer was fenced out of its group (it stopped consuming for good), else if the cluster does not
     * describe itself within a few seconds.
     */
    @Override
    public void checkHealth() {
        if (!fenced.isEmpty()) {
            throw new BrokerException(String.join("; ", new TreeMap<>(fenced).values()), false);
        }
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

    /** {@code <source><dead-letter-suffix>}, the topic {@link KafkaDelivery#deadLetter} produces to by default. */
    @Override
    public String defaultDeadLetterDestination(String source) {
        return source + settings.deadLetterSuffix();
    }

    /**
     * The records between the reader's committed offsets (a partition without one: the earliest offset, where a
     * new group starts) and the end offsets, summed over the topic's partitions; nothing for a topic that does not
     * exist. Acknowledged records stay in the topic: only the reader's group moves past them.
     */
    @Override
    public Optional<Backlog> backlog(SubscriptionRequest request) {
        Objects.requireNonNull(request, "request");
        ensureReachable();
        String topic = request.source();
        String group = settings.groupId(request.pipeline());
        long wait = connectTimeout.toMillis();
        try {
            Optional<Map<TopicPartition, long[]>> ranges = GroupRanges.read(admin(), topic, group, wait);
            if (ranges.isEmpty()) {
                return Optional.of(new Backlog(0, true));
            }
            long messages = 0;
            for (long[] range : ranges.get().values()) {
                messages += Math.max(0, range[1] - range[0]);
            }
            return Optional.of(new Backlog(messages, true));
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            throw new BrokerException("Kafka at " + settings.common().get("bootstrap.servers")
                    + " did not tell the offsets of topic '" + topic + "' and group '" + group + "' within "
                    + ConfigKey.formatDuration(connectTimeout) + ": " + cause.getMessage(), true, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while reading the offsets of topic '" + topic + "'", true, e);
        }
    }

    /**
     * Reads the topic from {@code reader}'s committed offsets (the group {@code group-id-prefix + reader}; without
     * one, the earliest) by a consumer of no group that assigns and seeks, and never commits: see {@link KafkaBrowse}.
     */
    @Override
    public List<BrowsedMessage> browse(String destination, String reader, int max) {
        Objects.requireNonNull(destination, "destination");
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        ensureReachable();
        return new KafkaBrowse(settings, admin(), connectTimeout).read(destination, reader,
                Math.min(max, MAX_PAGE));
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
        KafkaProducer<byte[], byte[]> p = producer;
        if (p != null) {
            p.close(Duration.ofSeconds(5));
        }
        synchronized (this) {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The reply address of a request: Spring Kafka's {@code kafka_replyTopic} header (UTF-8) with its
     * {@code kafka_correlationId} (bytes); {@code null} without a reply topic.
     */
    static ReplyAddress replyAddress(Headers headers) {
        Header topic = headers.lastHeader(REPLY_TOPIC_HEADER);
        if (topic == null || topic.value() == null || topic.value().length == 0) {
            return null;
        }
        String name = new String(topic.value(), StandardCharsets.UTF_8);
        if (name.isBlank()) {
            return null;
        }
        Header correlation = headers.lastHeader(CORRELATION_ID_HEADER);
        return new ReplyAddress(name, correlation == null ? null : correlation.value());
    }

}
