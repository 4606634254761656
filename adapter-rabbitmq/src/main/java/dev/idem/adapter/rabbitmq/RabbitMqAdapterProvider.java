package dev.idem.adapter.rabbitmq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code rabbitmq} broker adapter: consumes and publishes through the RabbitMQ Java client
 * ({@code com.rabbitmq:amqp-client} 5.x), which speaks AMQP 0-9-1 to any RabbitMQ 3.x or 4.x. The AMQP 1.0
 * client ({@code com.rabbitmq.client:amqp-client} 0.x) was not chosen: it needs RabbitMQ 4.0 or later, and
 * the RabbitMQ of many installations (Debian's 3.10 among them) cannot talk to it.
 *
 * <h2>Consuming</h2>
 * Each subscription opens {@code consumers} channels (default 1) on the adapter's consuming connection, each
 * with manual acknowledgements and a prefetch ({@code basicQos}) of {@code prefetch}, by default the
 * pipeline's {@code max-in-flight} divided among the channels. Deliveries are handed to the pipeline in
 * batches by one thread per channel; the client's own threads never block on the pipeline.
 *
 * <h2>Settling</h2>
 * <ul>
 * <li>ack: {@code basicAck}. Calls on one channel are serialized; acks that arrive while another thread is
 * writing to the channel are sent together by that thread. A run of them becomes one {@code multiple} ack
 * only when every lower delivery tag of the channel is already settled (the runtime acks out of order from
 * many threads, so a lower tag may still be in flight); the others are acked one by one.</li>
 * <li>retry later: {@code basicNack(requeue=true)}. RabbitMQ has no per-message delay for a requeue, so for
 * a positive delay the adapter holds the delivery unacknowledged for that long and then requeues it; the
 * held delivery keeps its prefetch slot meanwhile. A requeued message comes back with the redelivered flag.</li>
 * <li>dead-letter: publishes a copy to the request's dead-letter destination (a queue name; by default
 * {@code <queue>.DLQ}) with publisher confirms and {@code mandatory}, and acks the original only once the
 * copy is confirmed. The copy keeps the original's properties and headers and adds
 * {@link dev.idem.spi.DeadLetterReason#toHeaders()}, {@code idem-origin-source} (the queue) and
 * {@code idem-origin-message-id} (the AMQP {@code message-id}, when the original had one).</li>
 * </ul>
 * Delivery tags belong to one channel: a settle for a delivery whose channel has since closed (connection
 * lost, subscription closed) is ignored and logged; the broker has already put the message back.
 *
 * <h2>What a received message holds</h2>
 * {@code source} is the queue; {@code key} is the {@value #KEY_HEADER} header when the message was published
 * by this adapter with a key, else the routing key it was published with; {@code headers} are the AMQP headers
 * as text, plus the AMQP {@code message-id} property as header {@code message-id} when the headers hold none
 * (so the default ID extractor, the {@code message-id} header, finds it); {@code brokerMessageId} is the AMQP
 * {@code message-id} property or {@code null}; {@code redelivered} is the envelope's flag;
 * {@code deliveryCount} is {@code x-delivery-count + 1} when the broker sets that header (quorum queues,
 * on redeliveries only: it counts earlier deliveries) and 0 otherwise (unknown).
 *
 * <h2>Publishing</h2>
 * {@link BrokerAdapter#publish} sends to the default exchange with the destination as routing key (so
 * the destination is a queue), persistent, {@code mandatory}, and waits for the broker's confirm; a message
 * no queue took (no queue of that name) is a {@link dev.idem.spi.BrokerException}. The {@code message-id}
 * property is the message's ID, else its {@code message-id} header, else a random UUID. A key travels as
 * header {@value #KEY_HEADER}. Publishing uses its own connection, so that broker flow control on
 * publishers never holds back the acknowledgements of consumers.
 *
 * <h2>Connection loss</h2>
 * Connections are re-opened by the adapter (the client's automatic recovery is off): each consumer
 * channel re-opens, re-applies its prefetch and consumes again, retrying with back-off up to 5s between
 * attempts; deliveries of the dead channel that were not settled come back from the broker.
 *
 * <p>Stateless and thread-safe; found through {@link java.util.ServiceLoader}. The adapters it creates are
 * thread-safe.
 */
public final class RabbitMqAdapterProvider implements BrokerAdapterProvider {

    /** The id users write in {@code broker.type}. */
    public static final String ID = "rabbitmq";

    /** The header that carries {@link dev.idem.spi.OutboundMessage#key()}: AMQP has no key but the routing key. */
    public static final String KEY_HEADER = "idem-key";

    static final ConfigKey<String> URI = ConfigKey.string("uri")
            .validate(u -> u.startsWith("amqp://") || u.startsWith("amqps://"), "be an AMQP URI: "
                    + "amqp://host:5672/virtual-host or amqps://host:5671/virtual-host (%2F is the default vhost '/')")
            .doc("Where RabbitMQ is, as amqp://[user:password@]host:port/vhost (amqps:// for TLS). Instead of "
                    + "host, port and virtual-host; give credentials in username and password rather than here.");

    static final ConfigKey<String> HOST = ConfigKey.string("host")
            .doc("The RabbitMQ host, when uri is not given. Default 127.0.0.1.");

    static final ConfigKey<Integer> PORT = ConfigKey.integer("port").atLeast(1).atMost(65_535)
            .doc("The AMQP port, when uri is not given. Default 5672, or 5671 with tls.enabled.");

    static final ConfigKey<String> VIRTUAL_HOST = ConfigKey.string("virtual-host")
            .doc("The virtual host, when uri is not given. Default /.");

    static final ConfigKey<String> USERNAME = ConfigKey.string("username")
            .doc("The user; overrides one in uri. Default guest (which RabbitMQ accepts from localhost only).");

    static final ConfigKey<Secret> PASSWORD = ConfigKey.secret("password")
            .doc("The password; overrides one in uri. Give it from the environment, e.g. ${RABBITMQ_PASSWORD}.");

    static final ConfigKey<Boolean> TLS_ENABLED = ConfigKey.bool("tls.enabled").defaultValue(false)
            .doc("Whether to connect over TLS (implied by an amqps:// uri).");

    static final ConfigKey<String> TLS_TRUSTSTORE = ConfigKey.string("tls.truststore")
            .doc("A trust store file (PKCS12 or JKS) of the CAs to trust instead of the JVM's.");

    static final ConfigKey<Secret> TLS_TRUSTSTORE_PASSWORD = ConfigKey.secret("tls.truststore-password")
            .doc("The trust store's password, if it has one.");

    static final ConfigKey<Boolean> TLS_VERIFY_HOSTNAME = ConfigKey.bool("tls.verify-hostname").defaultValue(true)
            .doc("Whether the server's certificate must name the host connected to. Turn off only for tests.");

    static final ConfigKey<String> CONNECTION_NAME = ConfigKey.string("connection-name").defaultValue("idem")
            .validate(n -> !n.isBlank(), "not be blank")
            .doc("The name the connections show in the management UI and rabbitmqctl list_connections, "
                    + "suffixed with -consume and -publish.");

    static final ConfigKey<Integer> PREFETCH = ConfigKey.integer("prefetch").atLeast(1).atMost(65_535)
            .doc("The most unacknowledged deliveries per consumer channel (basicQos). Default: the pipeline's "
                    + "max-in-flight divided by consumers, at least 1.");

    static final ConfigKey<Integer> CONSUMERS = ConfigKey.integer("consumers").defaultValue(1).atLeast(1).atMost(64)
            .doc("Channels (each with its consumer and hand-over thread) per subscription.");

    static final ConfigKey<Boolean> DECLARE = ConfigKey.bool("declare").defaultValue(true)
            .doc("Whether to declare what a subscription needs: its queue (durable, of queue-type, bound to "
                    + "exchange when set) and its dead-letter queue (durable, classic). An existing queue with other "
                    + "arguments makes the subscription fail; set false when queues are managed elsewhere.");

    static final ConfigKey<String> QUEUE_TYPE = ConfigKey.oneOf("queue-type", "classic", "quorum")
            .defaultValue("classic")
            .doc("The type of a queue the adapter declares (with declare: true). Quorum queues count deliveries.");

    static final ConfigKey<String> EXCHANGE = ConfigKey.string("exchange")
            .validate(n -> !n.isBlank() && !n.startsWith("amq."), "be a non-blank name not starting with 'amq.'")
            .doc("With declare: true, an exchange (declared durable, of exchange-type) to bind each consumed "
                    + "queue to with binding-key. Leave out to consume only what is sent to the queue directly.");

    static final ConfigKey<String> EXCHANGE_TYPE = ConfigKey.oneOf("exchange-type", "direct", "topic", "fanout",
                    "headers").defaultValue("topic")
            .doc("The type of the exchange declared for exchange.");

    static final ConfigKey<String> BINDING_KEY = ConfigKey.string("binding-key").defaultValue("#")
            .doc("The binding key from exchange to each consumed queue (# is everything on a topic exchange).");

    static final ConfigKey<String> RETRY_MODE = ConfigKey.oneOf("retry.mode", "requeue").defaultValue("requeue")
            .doc("How retry-later hands a message back: requeue = basicNack with requeue, after holding the "
                    + "delivery for the requested delay (RabbitMQ has no delayed requeue).");

    static final ConfigKey<Map<String, String>> CLIENT = ConfigKey.map("client")
            .doc("Native ConnectionFactory settings: " + ClientSettings.ACCEPTED + ". Timeouts take durations "
                    + "(30s, 500ms); requested-heartbeat is rounded to seconds.");

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(URI).define(HOST).define(PORT).define(VIRTUAL_HOST)
            .define(USERNAME).define(PASSWORD)
            .define(TLS_ENABLED).define(TLS_TRUSTSTORE).define(TLS_TRUSTSTORE_PASSWORD).define(TLS_VERIFY_HOSTNAME)
            .define(CONNECTION_NAME).define(PREFETCH).define(CONSUMERS)
            .define(DECLARE).define(QUEUE_TYPE).define(EXCHANGE).define(EXCHANGE_TYPE).define(BINDING_KEY)
            .define(RETRY_MODE).define(CLIENT)
            .build();

    /** For {@link java.util.ServiceLoader}. */
    public RabbitMqAdapterProvider() {
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
     * Checks the keys together without connecting: uri with host, an unknown or invalid {@code client} setting,
     * an unreadable trust store, TLS settings with TLS off, an exchange that is not declared.
     */
    @Override
    public List<ConfigProblem> validate(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        return RabbitMqSettings.problems(config);
    }

    /**
     * Opens the consuming and publishing connections.
     *
     * @throws dev.idem.spi.ConfigException with what {@link #validate} reports
     * @throws dev.idem.spi.BrokerException if RabbitMQ cannot be reached (retriable) or refuses the credentials
     */
    @Override
    public BrokerAdapter create(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        RabbitMqSettings settings = RabbitMqSettings.from(config);
        return RabbitMqAdapter.open(settings);
    }
}
