package dev.idem.adapter.rocketmq;

import dev.idem.spi.Backlog;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.Validators;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.header.QueryConsumerOffsetRequestHeader;

/**
 * One adapter instance: a shared producer (publish, dead letters, the queues' ends for backlogs) and one
 * {@link RocketMqSubscription} (consumer thread) per subscribe call, each consumer in a client instance of its own.
 * Nothing connects before the first subscribe, publish, health check or backlog query, which first checks that a name
 * server answers ({@link NameServerProbe}). Thread-safe.
 */
final class RocketMqAdapter implements BrokerAdapter, DeadLetterBrowser {

    private static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(5);
    /** Numbers the client instances of this JVM: two adapters, or two subscriptions, never share a client id. */
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    /** A message with a key goes to the queue its key hashes to, so RocketMQ keeps one key's messages in order. */
    private static final MessageQueueSelector BY_KEY = (queues, message, key) ->
            queues.get(Math.floorMod(key.hashCode(), queues.size()));

    private final RocketMqSettings settings;
    private final String instanceName;
    private final Set<RocketMqSubscription> subscriptions = ConcurrentHashMap.newKeySet();
    /** Guards the first contact with the cluster and the producer's start; never held by {@link #close()}. */
    private final Object connecting = new Object();
    private volatile DefaultMQProducer producer;
    private volatile boolean closed;

    RocketMqAdapter(RocketMqSettings settings) {
        this.settings = settings;
        this.instanceName = "idem-" + ProcessHandle.current().pid() + "-" + INSTANCES.incrementAndGet();
    }

    /**
     * The started producer; the first call starts it and checks that the cluster can be reached, and after a failure
     * the next call tries again.
     *
     * @throws BrokerException naming the name servers if they cannot be reached within the connect timeout
     */
    private DefaultMQProducer producer() {
        DefaultMQProducer p = producer;
        if (p == null) {
            synchronized (connecting) {
                if (producer == null) {
                    producer = connect();
                }
                p = producer;
            }
        }
        if (closed) {
            // close() may have looked for the producer before it existed.
            p.shutdown();
            throw new BrokerException("The RocketMQ adapter is closed", false);
        }
        return p;
    }

    private DefaultMQProducer connect() {
        if (closed) {
            throw new BrokerException("The RocketMQ adapter is closed", false);
        }
        long deadline;
        try {
            deadline = NameServerProbe.awaitReachable(settings);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while connecting to RocketMQ", true, e);
        }
        // A client instance of each attempt's own: a failed attempt's producer may still be shutting down.
        DefaultMQProducer p = settings.producer(instanceName + "-" + INSTANCES.incrementAndGet());
        try {
            p.start();
        } catch (MQClientException e) {
            throw new BrokerException("Cannot start the RocketMQ producer for " + settings.path() + ": " + describe(e),
                    false, e);
        }
        try {
            NameServerProbe.awaitDescribed(settings,
                    p.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl(), deadline);
            return p;
        } catch (InterruptedException e) {
            ClientShutdown.inBackground("producer " + p.getInstanceName(), p::shutdown);
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while connecting to RocketMQ", true, e);
        } catch (RuntimeException e) {
            ClientShutdown.inBackground("producer " + p.getInstanceName(), p::shutdown);
            throw e;
        }
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (closed) {
            throw new BrokerException("The RocketMQ adapter is closed; cannot subscribe to '" + request.source() + "'",
                    false);
        }
        Source source = Source.parse(request.source());
        producer();
        String deadLetter = request.deadLetterDestination() != null
                ? Source.topicOf(request.deadLetterDestination()) : source.topic() + settings.deadLetterSuffix();
        RocketMqSubscription subscription = new RocketMqSubscription(settings, request, source,
                instanceName + "-" + INSTANCES.incrementAndGet(), deadLetter, listener, this, subscriptions::remove);
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
        String topic = Source.topicOf(destination);
        send(Messages.outbound(topic, message), message.key() == null || message.key().isBlank() ? null
                : message.key(), "publish to '" + topic + "'");
    }

    /**
     * Sends one message and waits until the broker stored it ({@code SEND_OK}).
     *
     * @param key the key whose hash picks the queue, or {@code null} for any queue (the client's round robin, and
     *        another broker on a retry)
     * @throws BrokerException if it was not confirmed, retriable where another try may succeed
     */
    void send(Message message, String key, String what) {
        if (closed) {
            throw new BrokerException("Cannot " + what + ": the RocketMQ adapter is closed", false);
        }
        try {
            Validators.checkTopic(message.getTopic());
        } catch (MQClientException e) {
            throw new BrokerException("Cannot " + what + ": " + describe(e), false, e);
        }
        DefaultMQProducer p = producer();
        long timeout = settings.sendTimeout().toMillis();
        SendResult result;
        try {
            result = key == null ? p.send(message, timeout) : p.send(message, BY_KEY, key, timeout);
        } catch (MQClientException e) {
            throw new BrokerException("RocketMQ did not take the " + what + ": " + describe(e),
                    e.getResponseCode() != ResponseCode.MESSAGE_ILLEGAL, e);
        } catch (MQBrokerException e) {
            int code = e.getResponseCode();
            throw new BrokerException("RocketMQ refused the " + what + ": " + describe(e), code != ResponseCode
                    .NO_PERMISSION && code != ResponseCode.MESSAGE_ILLEGAL && code != ResponseCode.TOPIC_NOT_EXIST, e);
        } catch (RemotingException e) {
            throw new BrokerException("RocketMQ did not confirm the " + what + " within "
                    + ConfigKey.formatDuration(settings.sendTimeout()) + ": " + describe(e), true, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while waiting for RocketMQ to confirm the " + what, true, e);
        } catch (RuntimeException e) {
            throw new BrokerException("RocketMQ did not take the " + what + ": " + describe(e), false, e);
        }
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            // Stored on the master, but not flushed or not replicated as the broker is configured to require.
            throw new BrokerException("RocketMQ did not confirm the " + what + ": " + result.getSendStatus(), true);
        }
    }

    /** The offset after the last message of {@code queue}, as the broker tells it (for the backlog gauge). */
    long maxOffset(MessageQueue queue) throws MQClientException {
        return producer().maxOffset(queue);
    }

    /** Fails if no name server describes the cluster within a few seconds. */
    @Override
    public void checkHealth() {
        DefaultMQProducer p = producer();
        try {
            p.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl()
                    .getBrokerClusterInfo(HEALTH_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while checking RocketMQ's health", true, e);
        } catch (Exception e) {
            throw new BrokerException("RocketMQ name server [" + String.join(", ", settings.nameServers())
                    + "] did not describe the cluster within " + ConfigKey.formatDuration(HEALTH_TIMEOUT) + ": "
                    + describe(e), true, e);
        }
    }

    /** {@code <topic><dead-letter-suffix>}, the topic {@link RocketMqDelivery#deadLetter} sends to by default. */
    @Override
    public String defaultDeadLetterDestination(String source) {
        return Source.topicOf(source) + settings.deadLetterSuffix();
    }

    /**
     * The messages between the reader group's committed offsets (a queue without one: its first offset, where a new
     * group starts) and the queues' ends, summed over the topic's queues; nothing for a topic that does not exist.
     * Acknowledged messages stay in the topic: only the reader's group moves past them.
     */
    @Override
    public Optional<Backlog> backlog(SubscriptionRequest request) {
        Objects.requireNonNull(request, "request");
        String topic = Source.topicOf(request.source());
        String group = settings.group(request.pipeline());
        DefaultMQProducer p = producer();
        MQClientInstance client = p.getDefaultMQProducerImpl().getMqClientFactory();
        try {
            List<MessageQueue> queues;
            try {
                queues = p.fetchPublishMessageQueues(topic);
            } catch (MQClientException e) {
                if (!topicExists(client, topic)) {
                    return Optional.of(new Backlog(0, true));
                }
                throw e;
            }
            long messages = 0;
            for (MessageQueue q : queues) {
                long end = p.maxOffset(q);
                long from = committed(client, group, q);
                if (from < 0) {
                    from = p.minOffset(q);
                }
                messages += Math.max(0, end - from);
            }
            return Optional.of(new Backlog(messages, true));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while reading the offsets of topic '" + topic + "'", true, e);
        } catch (Exception e) {
            throw new BrokerException("RocketMQ at [" + String.join(", ", settings.nameServers()) + "] did not tell"
                    + " the offsets of topic '" + topic + "' and group '" + group + "': " + describe(e), true, e);
        }
    }

    /**
     * Reads the topic's queues by offset from the reader group's committed offsets (a queue without one: its first
     * offset) with a pull consumer of its own, started for this browse and shut down before returning; it never stores
     * an offset (see {@link RocketMqBrowse}). The position is {@code <topic>-<broker>-<queue>-<offset>}.
     */
    @Override
    @SuppressWarnings("deprecation")
    public List<BrowsedMessage> browse(String destination, String reader, int max) {
        Objects.requireNonNull(destination, "destination");
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        String topic = Source.topicOf(destination);
        String group = settings.group(reader);
        MQClientInstance client = producer().getDefaultMQProducerImpl().getMqClientFactory();
        org.apache.rocketmq.client.consumer.DefaultMQPullConsumer consumer =
                settings.browser(instanceName + "-browse-" + INSTANCES.incrementAndGet());
        try {
            if (!topicExists(client, topic)) {
                return List.of();
            }
            consumer.start();
            return new RocketMqBrowse(consumer, settings.connectTimeout().toMillis())
                    .read(topic, q -> committed(client, group, q), Math.min(max, MAX_PAGE));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BrokerException("Interrupted while browsing topic '" + topic + "'", true, e);
        } catch (BrokerException e) {
            throw e;
        } catch (Exception e) {
            throw new BrokerException("RocketMQ at [" + String.join(", ", settings.nameServers()) + "] could not be"
                    + " browsed for topic '" + topic + "': " + describe(e), true, e);
        } finally {
            consumer.shutdown();
        }
    }

    private boolean topicExists(MQClientInstance client, String topic) throws Exception {
        try {
            client.getMQClientAPIImpl().getTopicRouteInfoFromNameServer(topic, settings.connectTimeout().toMillis());
            return true;
        } catch (MQClientException e) {
            if (e.getResponseCode() == ResponseCode.TOPIC_NOT_EXIST) {
                return false;
            }
            throw e;
        }
    }

    /** The offset {@code group} committed for {@code queue}, or -1 if it has none. */
    private long committed(MQClientInstance client, String group, MessageQueue queue) throws Exception {
        String address = client.findBrokerAddressInPublish(queue.getBrokerName());
        if (address == null) {
            client.updateTopicRouteInfoFromNameServer(queue.getTopic());
            address = client.findBrokerAddressInPublish(queue.getBrokerName());
        }
        if (address == null) {
            throw new BrokerException("No route to broker '" + queue.getBrokerName() + "'", true);
        }
        QueryConsumerOffsetRequestHeader header = new QueryConsumerOffsetRequestHeader();
        header.setConsumerGroup(group);
        header.setTopic(queue.getTopic());
        header.setQueueId(queue.getQueueId());
        header.setBrokerName(queue.getBrokerName());
        try {
            return client.getMQClientAPIImpl().queryConsumerOffset(address, header, settings.connectTimeout().toMillis());
        } catch (MQBrokerException e) {
            if (e.getResponseCode() == ResponseCode.QUERY_NOT_FOUND) {
                return -1;
            }
            throw e;
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (RocketMqSubscription s : subscriptions.toArray(RocketMqSubscription[]::new)) {
            s.close();
        }
        DefaultMQProducer p = producer;
        if (p != null) {
            ClientShutdown.inBackground("producer " + p.getInstanceName(), p::shutdown);
        }
    }

    /** A RocketMQ exception's message without the client's "See ..." or "For more information ..." link to its FAQ. */
    static String describe(Throwable e) {
        String message = e.getMessage();
        if (message == null) {
            return e.getClass().getSimpleName();
        }
        int see = message.length();
        for (String suggestion : new String[] {"\nSee ", "See http", "\nFor more information", "For more information"}) {
            int at = message.indexOf(suggestion);
            if (at >= 0) {
                see = Math.min(see, at);
            }
        }
        String text = message.substring(0, see).strip();
        return text.isEmpty() ? e.getClass().getSimpleName() : text;
    }
}
