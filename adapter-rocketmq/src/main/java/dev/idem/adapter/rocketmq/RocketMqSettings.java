package dev.idem.adapter.rocketmq;

import static dev.idem.adapter.rocketmq.RocketMqAdapterProvider.*;

import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import java.time.Duration;
import java.util.List;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

/**
 * The validated {@code broker.rocketmq} section, and the clients it makes. Immutable.
 *
 * @param path where the section lives in the user's file, for messages
 * @param nameServers {@code host:port} of each name server
 * @param accessKey the ACL access key, or {@code null}
 * @param secretKey the ACL secret key, or {@code null}
 */
record RocketMqSettings(String path, List<String> nameServers, Duration connectTimeout, String groupPrefix,
        String accessKey, Secret secretKey, boolean tls, Duration commitInterval, Duration pollTimeout,
        int pullBatchSize, int pullThreads, String deadLetterSuffix, Duration sendTimeout, int sendRetries) {

    /** The group of the adapter's producer: RocketMQ needs one, and uses it only for transactional messages. */
    static final String PRODUCER_GROUP = "idem-producer";

    /**
     * @throws ConfigException with every contradiction {@link #problems} finds
     */
    static RocketMqSettings from(PluginConfig config) {
        List<ConfigProblem> problems = RocketMqAdapterProvider.problems(config);
        ConfigProblem.throwIfAny(problems);
        return new RocketMqSettings(config.path(), config.get(NAME_SERVER), config.get(CONNECT_TIMEOUT),
                config.get(GROUP_PREFIX), config.get(ACCESS_KEY), config.get(SECRET_KEY), config.get(TLS),
                config.get(COMMIT_INTERVAL), config.get(POLL_TIMEOUT), config.get(PULL_BATCH_SIZE),
                config.get(PULL_THREADS), config.get(DEAD_LETTER_SUFFIX), config.get(SEND_TIMEOUT),
                config.get(SEND_RETRIES));
    }

    /** The name servers as the client takes them: {@code host:port;host:port}. */
    String nameServerAddress() {
        return String.join(";", nameServers);
    }

    /** The consumer group of a pipeline. */
    String group(String pipeline) {
        return groupPrefix + pipeline;
    }

    /** Signs every request with the ACL keys, or {@code null} without them. */
    RPCHook rpcHook() {
        return accessKey == null ? null : new AclClientRPCHook(new SessionCredentials(accessKey, secretKey.reveal()));
    }

    /**
     * The adapter's producer, not started.
     *
     * @param instanceName the client instance it runs in, unique to it (each connection attempt has its own)
     */
    DefaultMQProducer producer(String instanceName) {
        DefaultMQProducer producer = new DefaultMQProducer(PRODUCER_GROUP, rpcHook());
        producer.setNamesrvAddr(nameServerAddress());
        producer.setInstanceName(instanceName);
        producer.setUseTLS(tls);
        producer.setSendMsgTimeout((int) Math.min(Integer.MAX_VALUE, sendTimeout.toMillis()));
        producer.setRetryTimesWhenSendFailed(sendRetries);
        producer.setRetryAnotherBrokerWhenNotStoreOK(true);
        producer.setMqClientApiTimeout((int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()));
        return producer;
    }

    /**
     * The consumer of one pipeline, not subscribed nor started: clustering, no automatic commit, from the first offset
     * for a new group, its caches sized by {@code maxInFlight}.
     *
     * @param instanceName the client instance it runs in: unique to the subscription, since RocketMQ allocates queues
     *        to client ids, and two consumers of one group with one id would both take every queue
     */
    DefaultLitePullConsumer consumer(String pipeline, int maxInFlight, String instanceName) {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group(pipeline), rpcHook());
        consumer.setNamesrvAddr(nameServerAddress());
        consumer.setInstanceName(instanceName);
        consumer.setUseTLS(tls);
        consumer.setMessageModel(MessageModel.CLUSTERING);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setAutoCommit(false);
        consumer.setPullBatchSize(pullBatchSize);
        consumer.setPullThreadNums(pullThreads);
        int cached = Math.max(maxInFlight, pullBatchSize);
        consumer.setPullThresholdForAll(cached);
        consumer.setPullThresholdForQueue(cached);
        consumer.setPollTimeoutMillis(pollTimeout.toMillis());
        consumer.setMqClientApiTimeout((int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()));
        return consumer;
    }

    /**
     * A pull consumer for a browse ({@link RocketMqBrowse}): it only pulls by offset and never stores one. Its group,
     * {@code <group-prefix>Browse_}, cannot be a pipeline's (pipeline names are lowercase, without {@code _}), so it
     * never joins a pipeline's rebalancing.
     */
    @SuppressWarnings("deprecation")
    org.apache.rocketmq.client.consumer.DefaultMQPullConsumer browser(String instanceName) {
        org.apache.rocketmq.client.consumer.DefaultMQPullConsumer consumer =
                new org.apache.rocketmq.client.consumer.DefaultMQPullConsumer(group("Browse_"), rpcHook());
        consumer.setNamesrvAddr(nameServerAddress());
        consumer.setInstanceName(instanceName);
        consumer.setUseTLS(tls);
        consumer.setMqClientApiTimeout((int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()));
        return consumer;
    }
}
