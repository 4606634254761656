package dev.idem.adapter.kafka;

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
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;

/**
 * The {@code kafka} broker adapter ({@code broker.type: kafka}), on {@code kafka-clients} 4.x.
 *
 * <h2>Connecting</h2>
 * {@code create} connects nothing. The first subscribe or publish checks that a bootstrap server accepts a
 * connection and that the cluster describes itself through it, within {@code connect-timeout}; otherwise it
 * fails once with a {@link BrokerException} naming the servers and why each could not be reached,
 * instead of the clients' reconnect warnings. Only then are the consumer and the producer created.
 *
 * <h2>Consuming</h2>
 * One consumer group per pipeline ({@code group-id-prefix} + pipeline name) and one consumer thread per
 * subscription, with the cooperative-sticky assignor unless the {@code client} map names another. Offsets
 * are committed by hand only ({@code enable.auto.commit=false}): per partition, the offset after the highest
 * <em>contiguous</em> acknowledged record, every {@code commit-interval}, when a partition is revoked and on
 * close. Acks may come out of order (key ordering, concurrency); a commit never passes a record that was
 * not acknowledged. On revoke, in-flight work of the revoked partitions gets until {@code revoke-timeout} to
 * finish; what is contiguous is committed, the rest is abandoned and its later settles are ignored (the new
 * owner receives those records again).
 *
 * <p>With {@code group-instance-id}, each consumer is a static member of its group under that id ({@code <id>-2},
 * {@code <id>-3}... for further live subscriptions of one pipeline in one adapter, which the runtime never makes).
 * A restart within {@code session.timeout.ms} takes the member's partitions back without a rebalance; a stop does
 * not leave the group, so its partitions are not revoked by a rebalance and the commit on close is what the
 * restarted member resumes from. A member fenced out by another live consumer with its id stops consuming, logs
 * why, and fails the health check.
 *
 * <h2>Back-pressure</h2>
 * {@code max.poll.records} is the pipeline's {@code maxInFlight} (at most 2,000) unless the {@code client}
 * map sets it. The consumer thread decodes records and hands batches to the pipeline through a dispatcher
 * thread, only as many as the pipeline has room for ({@code maxInFlight} minus the deliveries it has not
 * settled). Once a poll's worth of records waits for room, every assigned partition is paused and the
 * consumer thread keeps polling without fetching: the consumer stays in its group and serves rebalances
 * however slowly handlers run, instead of blocking the poll and exceeding {@code max.poll.interval.ms}.
 *
 * <h2>Retry later and dead letters</h2>
 * {@code retryLater(delay)} pauses the partition and, after the delay, seeks back to the lowest offset handed
 * back, so that record and the later unacknowledged ones of the partition are delivered again (already
 * acknowledged ones are skipped); the delivery count is kept in memory per offset.
 * {@code deadLetter(reason)} produces the original key, payload and headers plus the reason's headers and the
 * origin (topic, partition, offset) to {@code <topic><dead-letter-suffix>} or the pipeline's dead-letter
 * destination, waits until the broker acknowledged it ({@code acks=all}, idempotent producer), then acks.
 *
 * <p>Stateless and thread-safe; found through {@link ServiceLoader}. The adapters it creates are
 * thread-safe.
 */
public final class KafkaAdapterProvider implements BrokerAdapterProvider {

    /** The id users write in {@code broker.type}. */
    public static final String ID = "kafka";

    /** {@code broker.kafka.bootstrap-servers}: where the cluster is. */
    public static final ConfigKey<List<String>> BOOTSTRAP_SERVERS = ConfigKey.list("bootstrap-servers").required()
            .validate(servers -> !servers.isEmpty() && servers.stream().allMatch(KafkaAdapterProvider::hostAndPort),
                    "be a list of host:port, e.g. [kafka-1:9092, kafka-2:9092]")
            .doc("Brokers to connect to first, as host:port; the client discovers the rest of the cluster.");

    /** {@code broker.kafka.connect-timeout}: how long the first contact with the cluster may take. */
    public static final ConfigKey<Duration> CONNECT_TIMEOUT = ConfigKey.duration("connect-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(100)).atMost(Duration.ofMinutes(10))
            .doc("How long the first subscribe or publish waits for a bootstrap server to accept a connection and "
                    + "describe the cluster before it fails, naming the servers (idem run stops; idem publish "
                    + "exits). Nothing else connects before that.");

    /** {@code broker.kafka.group-id-prefix}: put before the pipeline name to make the consumer group. */
    public static final ConfigKey<String> GROUP_ID_PREFIX = ConfigKey.string("group-id-prefix").defaultValue("")
            .validate(p -> p.chars().noneMatch(Character::isWhitespace), "not contain whitespace")
            .doc("Put before the pipeline's name to make its consumer group id, e.g. 'billing-' gives "
                    + "'billing-orders'; by default the group id is the pipeline's name.");

    /**
     * {@code broker.kafka.group-instance-id}: static membership. Kafka scopes an instance id to its group, and each
     * pipeline has a group of its own, so one value serves every pipeline of a process.
     */
    public static final ConfigKey<String> GROUP_INSTANCE_ID = ConfigKey.string("group-instance-id")
            .validate(id -> !id.isBlank(), "not be blank")
            .validate(id -> id.length() <= 240 && id.matches("[a-zA-Z0-9._-]+") && !id.equals(".") && !id.equals(".."),
                    "be at most 240 letters, digits, '.', '_' or '-'")
            .doc("Makes each pipeline's consumer a static member of its consumer group (Kafka's group.instance.id): "
                    + "a process that restarts within the session timeout takes its partitions back without a "
                    + "rebalance of the other processes. Give each process its own id that survives restarts, e.g. "
                    + "${HOSTNAME} where the environment sets it (a container; a StatefulSet's pod, whose name a "
                    + "replacement keeps, unlike a Deployment's); one value serves every pipeline, each having a "
                    + "group of its own. A static member does not leave its group on "
                    + "stop: its partitions wait for it until client.session.timeout.ms has passed (45s by default; "
                    + "30s to 45s suits restarts by a supervisor). Unset: each start and stop rebalances the group.");

    /** {@code broker.kafka.security.protocol}. */
    public static final ConfigKey<String> SECURITY_PROTOCOL = ConfigKey.oneOf("security.protocol",
                    "plaintext", "ssl", "sasl-plaintext", "sasl-ssl").defaultValue("plaintext")
            .doc("How to talk to the brokers: plaintext, ssl (TLS), sasl-plaintext or sasl-ssl (SASL over TLS).");

    /** {@code broker.kafka.sasl.mechanism}. */
    public static final ConfigKey<String> SASL_MECHANISM = ConfigKey.oneOf("sasl.mechanism",
                    "plain", "scram-sha-256", "scram-sha-512").defaultValue("plain")
            .doc("The SASL mechanism for sasl.username/sasl.password. Other mechanisms (GSSAPI, OAUTHBEARER) go "
                    + "through the client map: client.sasl.mechanism and client.sasl.jaas.config.");

    /** {@code broker.kafka.sasl.username}. */
    public static final ConfigKey<String> SASL_USERNAME = ConfigKey.string("sasl.username")
            .doc("The SASL user; needs sasl.password and a sasl-* security.protocol.");

    /** {@code broker.kafka.sasl.password}: a secret. */
    public static final ConfigKey<Secret> SASL_PASSWORD = ConfigKey.secret("sasl.password")
            .doc("The SASL password; give it from the environment, e.g. ${KAFKA_PASSWORD}.");

    /** {@code broker.kafka.tls.truststore-location}. */
    public static final ConfigKey<String> TLS_TRUSTSTORE = ConfigKey.string("tls.truststore-location")
            .doc("A trust store (PKCS12 or JKS, see tls.store-type) of the CAs to trust instead of the JVM's.");

    /** {@code broker.kafka.tls.truststore-password}: a secret. */
    public static final ConfigKey<Secret> TLS_TRUSTSTORE_PASSWORD = ConfigKey.secret("tls.truststore-password")
            .doc("The trust store's password.");

    /** {@code broker.kafka.tls.keystore-location}: for mutual TLS. */
    public static final ConfigKey<String> TLS_KEYSTORE = ConfigKey.string("tls.keystore-location")
            .doc("A key store holding this client's certificate and key, for mutual TLS.");

    /** {@code broker.kafka.tls.keystore-password}: a secret. */
    public static final ConfigKey<Secret> TLS_KEYSTORE_PASSWORD = ConfigKey.secret("tls.keystore-password")
            .doc("The key store's password.");

    /** {@code broker.kafka.tls.key-password}: a secret. */
    public static final ConfigKey<Secret> TLS_KEY_PASSWORD = ConfigKey.secret("tls.key-password")
            .doc("The private key's password, when it differs from the key store's.");

    /** {@code broker.kafka.tls.store-type}. */
    public static final ConfigKey<String> TLS_STORE_TYPE = ConfigKey.oneOf("tls.store-type", "pkcs12", "jks")
            .defaultValue("pkcs12")
            .doc("The format of the trust and key stores.");

    /** {@code broker.kafka.tls.verify-hostname}. */
    public static final ConfigKey<Boolean> TLS_VERIFY_HOSTNAME = ConfigKey.bool("tls.verify-hostname")
            .defaultValue(true)
            .doc("Whether a broker's certificate must name the host connected to. Turn off only for tests.");

    /** {@code broker.kafka.commit-interval}. */
    public static final ConfigKey<Duration> COMMIT_INTERVAL = ConfigKey.duration("commit-interval")
            .defaultValue(Duration.ofSeconds(1)).atLeast(Duration.ofMillis(10)).atMost(Duration.ofMinutes(5))
            .doc("How often acknowledged offsets are committed (also on revoke and on close). A crash redelivers "
                    + "at most this much acknowledged work, which the dedup store then recognises.");

    /** {@code broker.kafka.poll-timeout}. */
    public static final ConfigKey<Duration> POLL_TIMEOUT = ConfigKey.duration("poll-timeout")
            .defaultValue(Duration.ofMillis(500)).atLeast(Duration.ofMillis(1)).atMost(Duration.ofSeconds(30))
            .doc("The longest one poll waits for records when there are none.");

    /** {@code broker.kafka.revoke-timeout}. */
    public static final ConfigKey<Duration> REVOKE_TIMEOUT = ConfigKey.duration("revoke-timeout")
            .defaultValue(Duration.ofSeconds(10)).atLeast(Duration.ZERO).atMost(Duration.ofMinutes(4))
            .doc("How long in-flight work of a revoked partition may still finish and be committed; what is "
                    + "unfinished then is abandoned to the partition's new owner. Keep it below "
                    + "max.poll.interval.ms (5m by default).");

    /** {@code broker.kafka.dead-letter-suffix}. */
    public static final ConfigKey<String> DEAD_LETTER_SUFFIX = ConfigKey.string("dead-letter-suffix")
            .defaultValue(".DLQ")
            .validate(s -> s.matches("[a-zA-Z0-9._-]+"), "be letters, digits, '.', '_' or '-'")
            .doc("Appended to the topic name to make the default dead-letter topic, e.g. orders.DLQ.");

    /** {@code broker.kafka.producer.acks}. */
    public static final ConfigKey<String> PRODUCER_ACKS = ConfigKey.oneOf("producer.acks", "all", "1")
            .defaultValue("all")
            .doc("How many replicas must have a published or dead-lettered message before it counts as sent: "
                    + "all in-sync replicas (with an idempotent producer), or the leader alone (1).");

    /** {@code broker.kafka.producer.delivery-timeout}. */
    public static final ConfigKey<Duration> PRODUCER_DELIVERY_TIMEOUT = ConfigKey.duration("producer.delivery-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(100)).atMost(Duration.ofMinutes(10))
            .doc("How long a publish or a dead-letter copy may take, retries included, before it fails.");

    /** {@code broker.kafka.client}: native client settings. */
    public static final ConfigKey<Map<String, String>> CLIENT = ConfigKey.map("client")
            .doc("Native kafka-clients settings passed to the consumer and the producer (each gets the keys it "
                    + "knows), e.g. client.max.poll.records: 500. They override the adapter's defaults; "
                    + "group.id, group.instance.id, enable.auto.commit, transactional.id and (de)serializers are the "
                    + "adapter's own, and a key no Kafka client knows is rejected.");

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(BOOTSTRAP_SERVERS)
            .define(CONNECT_TIMEOUT)
            .define(GROUP_ID_PREFIX)
            .define(GROUP_INSTANCE_ID)
            .define(SECURITY_PROTOCOL)
            .define(SASL_MECHANISM)
            .define(SASL_USERNAME)
            .define(SASL_PASSWORD)
            .define(TLS_TRUSTSTORE)
            .define(TLS_TRUSTSTORE_PASSWORD)
            .define(TLS_KEYSTORE)
            .define(TLS_KEYSTORE_PASSWORD)
            .define(TLS_KEY_PASSWORD)
            .define(TLS_STORE_TYPE)
            .define(TLS_VERIFY_HOSTNAME)
            .define(COMMIT_INTERVAL)
            .define(POLL_TIMEOUT)
            .define(REVOKE_TIMEOUT)
            .define(DEAD_LETTER_SUFFIX)
            .define(PRODUCER_ACKS)
            .define(PRODUCER_DELIVERY_TIMEOUT)
            .define(CLIENT)
            .build();

    /** For {@link ServiceLoader}. */
    public KafkaAdapterProvider() {
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
     * Checks the keys together without contacting Kafka: TLS or SASL settings that the security protocol does not
     * use, a user without password, client settings the adapter owns or kafka-clients does not know.
     */
    @Override
    public List<ConfigProblem> validate(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        return KafkaSettings.problems(config);
    }

    /**
     * Creates an adapter; connections are opened on first use, once the bootstrap servers answered within
     * {@code connect-timeout}.
     *
     * @throws ConfigException with what {@link #validate} reports
     * @throws BrokerException if the Kafka client rejects the resulting settings
     */
    @Override
    public BrokerAdapter create(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        return new KafkaAdapter(KafkaSettings.from(config), config.get(CONNECT_TIMEOUT),
                config.path() + "." + CONNECT_TIMEOUT.name());
    }

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
