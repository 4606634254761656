package dev.idem.adapter.rocketmq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.ServiceLoader;

/**
 * The {@code rocketmq} broker adapter ({@code broker.type: rocketmq}), on Apache RocketMQ's remoting client
 * ({@code rocketmq-client} 5.3).
 *
 * <h2>Connecting</h2>
 * {@code create} connects nothing. The first subscribe, publish or backlog query checks that a name server accepts a
 * connection and answers with its cluster, within {@code connect-timeout}; otherwise it fails once with a
 * {@link BrokerException} naming the name servers and why each could not be reached, instead of the client's
 * endless route lookups. Only then are the producer and the consumers started; every subscribe checks again that a
 * name server accepts a connection before its consumer starts. Closing commits synchronously, then leaves the
 * clients' shutdown (seconds) to a background thread.
 *
 * <h2>Consuming</h2>
 * One consumer group per pipeline ({@code group-prefix} + pipeline name), clustering mode, and one lite pull consumer
 * ({@code DefaultLitePullConsumer}, subscribe mode: RocketMQ allocates the topic's message queues among the group's
 * members and rebalances them) with a consumer thread per subscription. A new group starts at the first offset of each
 * queue. Offsets are never committed by the client on its own ({@code autoCommit} off): per message queue, the offset
 * after the highest <em>contiguous</em> acknowledged message is handed to the client's offset store as soon as it
 * moves, written to the broker every {@code commit-interval}, and synchronously on close. Acks may come out of
 * order (key ordering, concurrency); a commit never passes a message that was not acknowledged. When a rebalance
 * takes a queue away, the client writes what the offset store holds, i.e. what was finished, and nothing else;
 * later settles of that queue's deliveries are ignored, and its new owner receives them again. A new consumer owns
 * its queues about a second after it starts; with the client's system property
 * {@code rocketmq.client.rebalance.minInterval} below 1000 ms, sooner ({@code FirstRebalance}).
 *
 * <p>Why the lite pull consumer and not the push consumer: a push consumer settles a message by its listener's return
 * on the client's own threads (the pipeline settles later, from its own), and a message it does not consume is sent
 * back to the broker's {@code %RETRY%<group>} topic while the queue's offset moves past it, so the retry overtakes
 * the key's later messages and "nothing overtakes a message that goes back" would not hold. The lite pull consumer
 * leaves offsets and seeks to the caller, which is the Kafka adapter's model.
 *
 * <h2>Sources</h2>
 * {@code orders} consumes every message of the topic; {@code orders?tag=paid||shipped} those whose tag is one of the
 * listed (RocketMQ's tag expression); {@code orders?sql=amount > 100 AND region = 'eu'} those whose properties match
 * an SQL92 expression (the broker needs {@code enablePropertyFilter=true}). Filtered-out messages are never delivered
 * and count as consumed.
 *
 * <h2>Messages</h2>
 * The payload is the body; headers are the user properties, plus {@code KEYS} and {@code TAGS} when set; the key is
 * {@code KEYS}; {@code brokerMessageId} is the client's message ID ({@code UNIQ_KEY}), which stays the same when a
 * message is consumed again; the ordering key is the sharding key ({@code __SHARDINGKEY}, FIFO messages) or else the
 * first of the keys. Publishing sends a message with a key to the queue its key hashes to, so RocketMQ keeps one key's
 * messages in order; {@link dev.idem.spi.OutboundMessage#messageId()} goes in the {@code message-id} property; the
 * headers {@code KEYS}, {@code TAGS} and {@code DELAY} set the keys, the tag and the delay level (1 to 18, as the
 * broker's {@code messageDelayLevel} defines them); another RocketMQ system property as a header is refused.
 *
 * <h2>Back-pressure</h2>
 * The consumer thread polls only while fewer than a poll's worth of messages wait for the pipeline's room
 * ({@code maxInFlight} minus the deliveries it has not settled); the client caches at most {@code maxInFlight} messages
 * meanwhile. A queue holding many finished offsets behind an unfinished one is paused, which bounds the memory and the
 * redelivery after a crash. RocketMQ has no poll interval to miss: the client heartbeats on its own threads.
 *
 * <h2>Retry later and dead letters</h2>
 * {@code retryLater(delay)} pauses the queue and, after the delay, seeks back to the lowest offset handed back, so that
 * message and the later unacknowledged ones of the queue are delivered again (acknowledged ones are skipped); the
 * delivery count is kept in memory per offset, plus the message's {@code reconsumeTimes}. RocketMQ's {@code %RETRY%}
 * topic is not used: its copies would overtake nothing-else-of-the-key, and they would be new messages of another
 * topic. {@code deadLetter(reason)} sends a copy (body, keys, tag, user properties, the reason's and the origin's
 * headers) to {@code <topic><dead-letter-suffix>} or the pipeline's dead-letter destination, waits for the broker's
 * {@code SEND_OK}, then acks. RocketMQ's own {@code %DLQ%<group>} topic is not used either: the broker copies a message
 * there as it is stored, without the reason, and makes the topic unreadable until an operator changes its permission.
 *
 * <p>Stateless and thread-safe; found through {@link ServiceLoader}. The adapters it creates are thread-safe.
 */
public final class RocketMqAdapterProvider implements BrokerAdapterProvider {

    /** The id users write in {@code broker.type}. */
    public static final String ID = "rocketmq";

    /** {@code broker.rocketmq.name-server}: where the cluster is. */
    public static final ConfigKey<List<String>> NAME_SERVER = ConfigKey.list("name-server").required()
            .validate(servers -> !servers.isEmpty() && servers.stream().allMatch(RocketMqAdapterProvider::hostAndPort),
                    "be a list of host:port, e.g. [namesrv-1:9876, namesrv-2:9876]")
            .doc("Name servers to ask for the cluster's routes, as host:port; the client finds the brokers through "
                    + "them.");

    /** {@code broker.rocketmq.connect-timeout}. */
    public static final ConfigKey<Duration> CONNECT_TIMEOUT = ConfigKey.duration("connect-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(100)).atMost(Duration.ofMinutes(10))
            .doc("How long the first subscribe or publish waits for a name server to accept a connection and describe "
                    + "the cluster before it fails, naming the name servers (idem run stops; idem publish exits). "
                    + "Nothing else connects before that.");

    /** {@code broker.rocketmq.group-prefix}. */
    public static final ConfigKey<String> GROUP_PREFIX = ConfigKey.string("group-prefix").defaultValue("")
            .validate(p -> p.matches("[a-zA-Z0-9_-]*"), "be letters, digits, '_' or '-'")
            .doc("Put before the pipeline's name to make its consumer group, e.g. 'billing-' gives 'billing-orders'; "
                    + "by default the group is the pipeline's name.");

    /** {@code broker.rocketmq.access-key}. */
    public static final ConfigKey<String> ACCESS_KEY = ConfigKey.string("access-key")
            .validate(k -> !k.isBlank(), "not be blank")
            .doc("The ACL access key; needs secret-key.");

    /** {@code broker.rocketmq.secret-key}: a secret. */
    public static final ConfigKey<Secret> SECRET_KEY = ConfigKey.secret("secret-key")
            .doc("The ACL secret key; give it from the environment, e.g. ${ROCKETMQ_SECRET_KEY}.");

    /** {@code broker.rocketmq.tls}. */
    public static final ConfigKey<Boolean> TLS = ConfigKey.bool("tls").defaultValue(false)
            .doc("Whether to talk to the name servers and brokers over TLS (the client's useTLS); the JVM's trust "
                    + "store decides which certificates are trusted.");

    /** {@code broker.rocketmq.commit-interval}. */
    public static final ConfigKey<Duration> COMMIT_INTERVAL = ConfigKey.duration("commit-interval")
            .defaultValue(Duration.ofSeconds(1)).atLeast(Duration.ofMillis(10)).atMost(Duration.ofMinutes(5))
            .doc("How often acknowledged offsets are written to the broker (also on close, and when a rebalance "
                    + "takes a queue away). A crash redelivers at most this much acknowledged work, which the dedup "
                    + "store then recognises.");

    /** {@code broker.rocketmq.poll-timeout}. */
    public static final ConfigKey<Duration> POLL_TIMEOUT = ConfigKey.duration("poll-timeout")
            .defaultValue(Duration.ofMillis(100)).atLeast(Duration.ofMillis(1)).atMost(Duration.ofSeconds(30))
            .doc("The longest one poll of the consumer thread waits for messages when there are none; a retry's seek "
                    + "back may wait this long.");

    /** {@code broker.rocketmq.pull-batch-size}. */
    public static final ConfigKey<Integer> PULL_BATCH_SIZE = ConfigKey.integer("pull-batch-size").defaultValue(32)
            .atLeast(1).atMost(1024)
            .doc("The most messages one pull of one queue fetches (the broker caps it too, at its "
                    + "maxTransferCountOnMessageInMemory, 32 by default).");

    /** {@code broker.rocketmq.pull-threads}. */
    public static final ConfigKey<Integer> PULL_THREADS = ConfigKey.integer("pull-threads").defaultValue(4)
            .atLeast(1).atMost(64)
            .doc("The threads that pull the queues of one pipeline from the brokers.");

    /** {@code broker.rocketmq.dead-letter-suffix}. */
    public static final ConfigKey<String> DEAD_LETTER_SUFFIX = ConfigKey.string("dead-letter-suffix")
            .defaultValue("-DLQ")
            .validate(s -> s.matches("[a-zA-Z0-9_-]+"), "be letters, digits, '_' or '-' (RocketMQ topic names)")
            .doc("Appended to the topic name to make the default dead-letter topic, e.g. orders-DLQ.");

    /** {@code broker.rocketmq.producer.send-timeout}. */
    public static final ConfigKey<Duration> SEND_TIMEOUT = ConfigKey.duration("producer.send-timeout")
            .defaultValue(Duration.ofSeconds(10)).atLeast(Duration.ofMillis(100)).atMost(Duration.ofMinutes(10))
            .doc("How long a publish or a dead-letter copy may take, retries included, before it fails.");

    /** {@code broker.rocketmq.producer.retries}. */
    public static final ConfigKey<Integer> SEND_RETRIES = ConfigKey.integer("producer.retries").defaultValue(2)
            .atLeast(0).atMost(16)
            .doc("How often a send the broker did not confirm is tried again within producer.send-timeout (another "
                    + "broker's queue where the message has no key).");

    /** RocketMQ's longest group name. */
    private static final int MAX_GROUP_LENGTH = 255;

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(NAME_SERVER)
            .define(CONNECT_TIMEOUT)
            .define(GROUP_PREFIX)
            .define(ACCESS_KEY)
            .define(SECRET_KEY)
            .define(TLS)
            .define(COMMIT_INTERVAL)
            .define(POLL_TIMEOUT)
            .define(PULL_BATCH_SIZE)
            .define(PULL_THREADS)
            .define(DEAD_LETTER_SUFFIX)
            .define(SEND_TIMEOUT)
            .define(SEND_RETRIES)
            .build();

    /** For {@link ServiceLoader}. */
    public RocketMqAdapterProvider() {
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    /**
     * Checks the keys together without contacting RocketMQ: an access key without its secret key or the reverse, a
     * prefix that makes group names RocketMQ refuses.
     */
    @Override
    public List<ConfigProblem> validate(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        return problems(config);
    }

    /**
     * Creates an adapter; connections are opened on first use, once a name server answered within
     * {@code connect-timeout}.
     *
     * @throws ConfigException with what {@link #validate} reports
     */
    @Override
    public BrokerAdapter create(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        return new RocketMqAdapter(RocketMqSettings.from(config));
    }

    /**
     * Every contradiction between the keys, without contacting RocketMQ. Here rather than in {@link RocketMqSettings}
     * so that checking a configuration loads no class of the RocketMQ client.
     */
    static List<ConfigProblem> problems(PluginConfig config) {
        String path = config.path();
        List<ConfigProblem> problems = new ArrayList<>();
        String accessKey = config.get(ACCESS_KEY);
        Secret secretKey = config.get(SECRET_KEY);
        if ((accessKey == null) != (secretKey == null)) {
            problems.add(new ConfigProblem(path + "." + (accessKey == null ? ACCESS_KEY : SECRET_KEY).name(),
                    path + ".access-key and " + path + ".secret-key go together: give both, or neither to connect"
                    + " without ACL"));
        }
        String prefix = config.get(GROUP_PREFIX);
        if (prefix.length() >= MAX_GROUP_LENGTH) {
            problems.add(new ConfigProblem(path + "." + GROUP_PREFIX.name(), path + ".group-prefix is "
                    + prefix.length() + " characters long: a consumer group (the prefix and the pipeline's name) has"
                    + " at most " + MAX_GROUP_LENGTH));
        }
        return problems;
    }

    /** Whether {@code server} is {@code host:port} with a port RocketMQ can listen on. */
    private static boolean hostAndPort(String server) {
        int colon = server.lastIndexOf(':');
        if (colon <= 0 || colon == server.length() - 1) {
            return false;
        }
        try {
            int port = Integer.parseInt(server.substring(colon + 1));
            return port > 0 && port < 65536;
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
