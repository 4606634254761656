package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import java.io.File;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQSslConnectionFactory;
import org.apache.activemq.RedeliveryPolicy;

/**
 * The {@code activemq} broker adapter: ActiveMQ Classic over JMS ({@code activemq-client}, Jakarta JMS), with
 * an optional embedded broker so that a configuration runs with no outside service.
 *
 * <h2>Sources and destinations</h2>
 * {@code queue://orders} or a plain {@code orders} is a queue; {@code topic://prices} is a topic, consumed
 * through a durable subscription named after the pipeline, on a connection whose client id is
 * {@code idem:<pipeline>} (a durable subscription has one consumer at a time; to share a topic's load among
 * processes, consume a virtual-topic queue, {@code queue://Consumer.<pipeline>.VirtualTopic.<name>}). The
 * {@link dev.idem.spi.InboundMessage#source() source} of a received message is the pipeline's source as
 * written. The default dead-letter destination is the queue {@code <name>.DLQ} (for {@code topic://prices},
 * the queue {@code prices.DLQ}); a pipeline's {@code dead-letter} overrides it, in the same syntax.
 *
 * <h2>Messages</h2>
 * Published messages are persistent BytesMessages, sent synchronously (the factory's {@code alwaysSyncSend}
 * is forced on), so {@code publish} returns once the broker stored them. The key is the JMS group id
 * ({@code JMSXGroupID}); {@link dev.idem.spi.OutboundMessage#messageId()} becomes the {@code message-id}
 * property (JMS does not let a sender choose {@code JMSMessageID}). On receipt: the payload is a
 * BytesMessage's bytes, a TextMessage's text as UTF-8, a MapMessage as a JSON object (names sorted; a
 * {@code byte[]} value as a base64 string; see {@code MapMessageJson}), or empty for a body-less Message. Any
 * other type (ObjectMessage, StreamMessage, BlobMessage) never reaches a handler: the session's thread
 * dead-letters it with the cause {@code unsupported-message-type} (a body that cannot be read:
 * {@code unreadable-message}), as a copy of the original of its own type and body, then acknowledges it; if the
 * copy fails, the original stays unacknowledged and is redelivered. An ObjectMessage is never deserialized.
 * Headers are the properties as text, without {@code JMSX*}, plus {@code JMSCorrelationID} and
 * {@code JMSType} under those names when set; the broker message id is {@code JMSMessageID}; the delivery count is
 * {@code JMSXDeliveryCount}. {@code JMSRedelivered} is exposed as the informative {@code redelivered} and
 * decides nothing: after a broker restart an unacknowledged message comes back with it false.
 *
 * <h2>Settlement</h2>
 * Sessions use {@code INDIVIDUAL_ACKNOWLEDGE}: an ack removes exactly its message, sent from the runtime's
 * thread (safe in activemq-client 6.3.1, see {@code JmsDelivery}). Retry-later leaves the message
 * unacknowledged and recovers the session once all its other deliveries are settled, so the client's
 * redelivery policy ({@code redelivery.*}) redelivers exactly the retried messages, with a higher delivery
 * count (see {@code SessionWorker}). Dead-letter sends a persistent copy synchronously (original body, key and
 * properties, {@link dev.idem.spi.DeadLetterReason#toHeaders()}, {@code idem-origin-source} and
 * {@code idem-origin-message-id}) and acknowledges the original only after the broker confirmed it.
 *
 * <h2>Prefetch and the in-flight window</h2>
 * Each consumer holds at most {@code W = min(prefetch, ceil(max-in-flight / consumers))} messages
 * unacknowledged, at most 200: a broker pages at most {@code maxPageSize} (200 by default) messages of a
 * destination into memory, and a consumer holding more unacknowledged messages than that can stall dispatch.
 * Since the client's "delivered" acks extend the prefetch window by the messages received and not yet
 * acknowledged, W is split: the JMS prefetch is {@code W/2}, and the session hands over at most the other half
 * unsettled before it waits for settles.
 *
 * <h2>Connecting and connection loss</h2>
 * Connecting ({@code create}, and a topic subscription's own connection) fails with a retriable
 * {@link dev.idem.spi.BrokerException} naming the URL when the connection has not started within
 * {@code connect-timeout}; a {@code failover:} transport would otherwise wait for its first connection forever.
 * Once connected, a {@code failover:(tcp://a:61616,tcp://b:61616)} URL reconnects by itself without limit and the
 * broker redelivers every unacknowledged message; settles of deliveries received before the interruption are
 * ignored, so a stale handle never acknowledges anything. While it reconnects, a send (publish, dead-letter copy)
 * fails after {@code connect-timeout} too, unless the URL sets the transport's own {@code timeout} option. Without
 * {@code failover:}, a lost connection stops the subscriptions and fails {@code checkHealth()}.
 *
 * <p>The client's own duplicate suppression ({@code checkForDuplicates}) is turned off: with
 * {@code INDIVIDUAL_ACKNOWLEDGE} it poison-acks the broker's redelivery after a reconnect into
 * {@code ActiveMQ.DLQ}; the runtime's store recognises duplicates instead.
 *
 * <h2>Embedded broker</h2>
 * With {@code embedded.enabled: true}, {@code create} starts a persistent broker (KahaDB in
 * {@code embedded.data-directory}, no JMX, no shutdown hook, no advisories) and connects to it through
 * {@code vm://<broker-name>?create=false} unless {@code url} says otherwise; {@code close()} stops it after
 * the connections. Messages survive a restart. Two processes on one data directory: the second fails with a
 * {@link dev.idem.spi.BrokerException} naming the locked directory.
 *
 * <p>Stateless and thread-safe; found through {@link java.util.ServiceLoader}.
 */
public final class ActiveMqBrokerAdapterProvider implements BrokerAdapterProvider {

    /** The id users write in {@code broker.type}. */
    public static final String ID = "activemq";

    /** The most a consumer prefetches: a broker's default {@code maxPageSize}. */
    public static final int MAX_PREFETCH = 200;

    public static final ConfigKey<String> URL = ConfigKey.string("url")
            .validate(ActiveMqBrokerAdapterProvider::isUri, "be an ActiveMQ broker URL such as tcp://host:61616, "
                    + "ssl://host:61617, vm://name or failover:(tcp://a:61616,tcp://b:61616)")
            .doc("The broker URL: tcp://host:61616, ssl://host:61617 (with tls.*), or "
                    + "failover:(tcp://a:61616,tcp://b:61616) to reconnect automatically. Default: the embedded "
                    + "broker's vm://<broker-name>?create=false when embedded.enabled, else tcp://localhost:61616.");

    public static final ConfigKey<Duration> CONNECT_TIMEOUT = ConfigKey.duration("connect-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(100)).atMost(Duration.ofHours(1))
            .doc("How long connecting may take (at start, for idem publish, and for each topic subscription's own "
                    + "connection) before it fails naming the URL. With a failover: URL it also bounds a send "
                    + "(publish, emitted message, dead-letter copy) while the connection is lost, unless the URL sets "
                    + "the transport's timeout option; once connected, the transport reconnects without limit.");

    public static final ConfigKey<String> USERNAME = ConfigKey.string("username")
            .doc("The user to connect as; leave out when the broker needs no authentication.");

    public static final ConfigKey<Secret> PASSWORD = ConfigKey.secret("password")
            .doc("The user's password; give it from the environment, e.g. ${ACTIVEMQ_PASSWORD}.");

    public static final ConfigKey<String> TLS_TRUST_STORE = ConfigKey.string("tls.trust-store")
            .doc("With ssl://: the trust store (a file path or URL) holding the broker's CA; default the JVM's.");

    public static final ConfigKey<Secret> TLS_TRUST_STORE_PASSWORD = ConfigKey.secret("tls.trust-store-password")
            .doc("The trust store's password.");

    public static final ConfigKey<String> TLS_KEY_STORE = ConfigKey.string("tls.key-store")
            .doc("With ssl://: the key store (a file path or URL) with this client's certificate, when the broker "
                    + "requires client authentication.");

    public static final ConfigKey<Secret> TLS_KEY_STORE_PASSWORD = ConfigKey.secret("tls.key-store-password")
            .doc("The key store's password.");

    public static final ConfigKey<String> TLS_STORE_TYPE = ConfigKey.oneOf("tls.store-type", "jks", "pkcs12")
            .defaultValue("pkcs12")
            .doc("The format of both stores.");

    public static final ConfigKey<Integer> CONSUMERS = ConfigKey.integer("consumers").defaultValue(1)
            .atLeast(1).atMost(64)
            .doc("JMS sessions (each with its own consumer and thread) per queue subscription. A topic's durable "
                    + "subscription always has one.");

    public static final ConfigKey<Integer> PREFETCH = ConfigKey.integer("prefetch").defaultValue(MAX_PREFETCH)
            .atLeast(1).atMost(MAX_PREFETCH)
            .doc("The most messages one consumer holds unacknowledged (prefetched plus handed to the pipeline and "
                    + "not yet settled); each consumer takes min(prefetch, max-in-flight / consumers), half of it as "
                    + "the JMS prefetch. At most 200, the broker's default maxPageSize, beyond which a consumer's "
                    + "unacknowledged messages can stall dispatch.");

    public static final ConfigKey<Duration> REDELIVERY_INITIAL_DELAY = ConfigKey.duration("redelivery.initial-delay")
            .defaultValue(Duration.ofSeconds(1)).atLeast(Duration.ZERO)
            .doc("How long a message handed back for retry waits before it is redelivered the first time.");

    public static final ConfigKey<Double> REDELIVERY_MULTIPLIER = ConfigKey.decimal("redelivery.multiplier")
            .defaultValue(2.0).atLeast(1.0)
            .doc("How much each further redelivery delay grows over the previous one (1 = constant).");

    public static final ConfigKey<Duration> REDELIVERY_MAXIMUM_DELAY = ConfigKey.duration("redelivery.maximum-delay")
            .defaultValue(Duration.ofMinutes(1)).atLeast(Duration.ZERO)
            .doc("The longest redelivery delay.");

    public static final ConfigKey<Integer> REDELIVERY_MAXIMUM_REDELIVERIES =
            ConfigKey.integer("redelivery.maximum-redeliveries").defaultValue(-1).atLeast(-1)
            .doc("Redeliveries after which the client hands a message to the broker's own dead-letter queue "
                    + "(ActiveMQ.DLQ, without Idem's headers); -1, the default, leaves the decision to the "
                    + "pipeline's max-deliveries.");

    public static final ConfigKey<Map<String, String>> CLIENT = ConfigKey.map("client")
            .doc("Further ActiveMQConnectionFactory properties, passed as they are, e.g. sendTimeout: 30000 or "
                    + "redeliveryPolicy.useCollisionAvoidance: true. An unknown property is an error.");

    public static final ConfigKey<Boolean> EMBEDDED_ENABLED = ConfigKey.bool("embedded.enabled").defaultValue(false)
            .doc("Run an ActiveMQ broker inside this process (persistent, KahaDB) and connect to it: no outside "
                    + "service needed.");

    public static final ConfigKey<String> EMBEDDED_DATA_DIRECTORY = ConfigKey.string("embedded.data-directory")
            .defaultValue("data/activemq").validate(s -> !s.isBlank(), "not be blank")
            .doc("Where the embedded broker keeps its messages; one process at a time (it is locked).");

    public static final ConfigKey<String> EMBEDDED_BROKER_NAME = ConfigKey.string("embedded.broker-name")
            .defaultValue("idem").validate(s -> s.matches("[A-Za-z0-9_.-]+"), "be letters, digits, '_', '.' or '-'")
            .doc("The embedded broker's name, as vm://<broker-name> reaches it.");

    public static final ConfigKey<String> EMBEDDED_LISTEN = ConfigKey.string("embedded.listen")
            .validate(ActiveMqBrokerAdapterProvider::isUri, "be a transport URL such as tcp://127.0.0.1:61616")
            .doc("A transport the embedded broker also listens on, so other processes can connect, e.g. "
                    + "tcp://127.0.0.1:61616; default none.");

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(URL).define(CONNECT_TIMEOUT).define(USERNAME).define(PASSWORD)
            .define(TLS_TRUST_STORE).define(TLS_TRUST_STORE_PASSWORD)
            .define(TLS_KEY_STORE).define(TLS_KEY_STORE_PASSWORD).define(TLS_STORE_TYPE)
            .define(CONSUMERS).define(PREFETCH)
            .define(REDELIVERY_INITIAL_DELAY).define(REDELIVERY_MULTIPLIER)
            .define(REDELIVERY_MAXIMUM_DELAY).define(REDELIVERY_MAXIMUM_REDELIVERIES)
            .define(CLIENT)
            .define(EMBEDDED_ENABLED).define(EMBEDDED_DATA_DIRECTORY).define(EMBEDDED_BROKER_NAME)
            .define(EMBEDDED_LISTEN)
            .build();

    /** For {@link java.util.ServiceLoader}. */
    public ActiveMqBrokerAdapterProvider() {
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
     * Checks the keys together without connecting: TLS settings without ssl://, a password without user,
     * embedded.listen without embedded.enabled, an unreadable key store, a URL the client cannot parse, and
     * every {@code client} entry that is not a property of the connection factory or that it refuses.
     */
    @Override
    public List<ConfigProblem> validate(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        List<ConfigProblem> problems = new ArrayList<>();
        String url = url(config);
        checkConsistent(config, url, problems);
        factory(config, url, problems);
        return problems;
    }

    /**
     * Validates the keys together, starts the embedded broker if enabled, and connects.
     *
     * @throws ConfigException with what {@link #validate} reports
     * @throws dev.idem.spi.BrokerException if the broker cannot be reached (retriable) or the embedded broker
     *         cannot start (its data directory locked by another process, a listen port in use)
     */
    @Override
    public BrokerAdapter create(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        String path = config.path();
        boolean embedded = config.get(EMBEDDED_ENABLED);
        String url = url(config);
        List<ConfigProblem> problems = new ArrayList<>();
        checkConsistent(config, url, problems);
        ActiveMQConnectionFactory factory = factory(config, url, problems);
        ConfigProblem.throwIfAny(problems);
        int consumers = config.get(CONSUMERS);
        int prefetch = config.get(PREFETCH);
        EmbeddedBroker broker = embedded ? EmbeddedBroker.start(config.get(EMBEDDED_BROKER_NAME),
                new File(config.get(EMBEDDED_DATA_DIRECTORY)), config.get(EMBEDDED_LISTEN), path) : null;
        ActiveMqAdapter.ConnectBound bound = new ActiveMqAdapter.ConnectBound(config.get(CONNECT_TIMEOUT),
                path + "." + CONNECT_TIMEOUT.name());
        return ActiveMqAdapter.connect(factory, url, bound, consumers, prefetch, broker);
    }

    private static String url(PluginConfig config) {
        return config.get(URL) != null ? config.get(URL) : config.get(EMBEDDED_ENABLED)
                ? "vm://" + config.get(EMBEDDED_BROKER_NAME) + "?create=false" : "tcp://localhost:61616";
    }

    private static void checkConsistent(PluginConfig config, String url, List<ConfigProblem> problems) {
        String path = config.path();
        if (config.get(PASSWORD) != null && config.get(USERNAME) == null) {
            problems.add(new ConfigProblem(path + "." + PASSWORD.name(), path + ".password is set but " + path
                    + ".username is not: give both, or neither"));
        }
        if (config.get(EMBEDDED_LISTEN) != null && !config.get(EMBEDDED_ENABLED)) {
            problems.add(new ConfigProblem(path + "." + EMBEDDED_LISTEN.name(), path + ".embedded.listen is set but "
                    + path + ".embedded.enabled is false: enable the embedded broker, or remove embedded.listen"));
        }
        if (tls(config) && !url.contains("ssl://")) {
            problems.add(new ConfigProblem(path + "." + URL.name(), path + ".tls.* is set but " + path + ".url '"
                    + Secret.maskCredentials(url) + "' uses no ssl:// transport: write ssl://host:61617 (or"
                    + " failover:(ssl://...)) to use it"));
        }
        for (ConfigKey<String> store : List.of(TLS_TRUST_STORE, TLS_KEY_STORE)) {
            String file = config.get(store);
            if (file != null && !file.contains(":/") && !new File(file).canRead()) {
                problems.add(ConfigProblem.invalid(path + "." + store.name(), file,
                        "must be a readable key store file (or a URL)"));
            }
        }
    }

    private static boolean tls(PluginConfig config) {
        return config.get(TLS_TRUST_STORE) != null || config.get(TLS_KEY_STORE) != null;
    }

    /** The connection factory the settings describe; {@code null} when its URL is refused (added to problems). */
    private static ActiveMQConnectionFactory factory(PluginConfig config, String url, List<ConfigProblem> problems) {
        String path = config.path();
        ActiveMQConnectionFactory factory;
        try {
            factory = tls(config) ? sslFactory(config, url) : new ActiveMQConnectionFactory(url);
        } catch (Exception e) {
            problems.add(ConfigProblem.invalid(path + "." + URL.name(), Secret.maskCredentials(url), e.getMessage()));
            return null;
        }
        if (config.get(USERNAME) != null) {
            factory.setUserName(config.get(USERNAME));
        }
        if (config.get(PASSWORD) != null) {
            factory.setPassword(config.get(PASSWORD).reveal());
        }
        factory.setRedeliveryPolicy(redeliveryPolicy(config));
        // The adapter creates no temporary destinations, whose advisories this would watch. Without the watch the
        // client also sends to another connection's temporary queue (a request's JMSReplyTo) without checking that
        // the broker announced it, which a broker that sends no advisories (the embedded one) never does.
        factory.setWatchTopicAdvisories(false);
        ClientProperties.apply(factory, config.get(CLIENT) == null ? Map.of() : config.get(CLIENT), path, problems);
        factory.setAlwaysSyncSend(true);
        // The client's duplicate audit is not rolled back for INDIVIDUAL_ACKNOWLEDGE sessions when the transport
        // is interrupted or a consumer closes (ActiveMQMessageConsumer.clearDeliveredList and dispose only do so
        // for CLIENT_ACKNOWLEDGE): it would take the broker's legitimate redelivery of an unacknowledged
        // message for a duplicate and poison-ack it into ActiveMQ.DLQ, unprocessed. Duplicates are the
        // runtime's business; its store recognises them.
        factory.setCheckForDuplicates(false);
        return factory;
    }

    private static ActiveMQConnectionFactory sslFactory(PluginConfig config, String url) throws Exception {
        ActiveMQSslConnectionFactory ssl = new ActiveMQSslConnectionFactory(url);
        String type = config.get(TLS_STORE_TYPE);
        ssl.setTrustStoreType(type);
        ssl.setKeyStoreType(type);
        if (config.get(TLS_TRUST_STORE) != null) {
            ssl.setTrustStore(config.get(TLS_TRUST_STORE));
        }
        if (config.get(TLS_TRUST_STORE_PASSWORD) != null) {
            ssl.setTrustStorePassword(config.get(TLS_TRUST_STORE_PASSWORD).reveal());
        }
        if (config.get(TLS_KEY_STORE) != null) {
            ssl.setKeyStore(config.get(TLS_KEY_STORE));
        }
        if (config.get(TLS_KEY_STORE_PASSWORD) != null) {
            ssl.setKeyStorePassword(config.get(TLS_KEY_STORE_PASSWORD).reveal());
        }
        return ssl;
    }

    private static RedeliveryPolicy redeliveryPolicy(PluginConfig config) {
        RedeliveryPolicy policy = new RedeliveryPolicy();
        long initial = config.get(REDELIVERY_INITIAL_DELAY).toMillis();
        double multiplier = config.get(REDELIVERY_MULTIPLIER);
        policy.setInitialRedeliveryDelay(initial);
        policy.setRedeliveryDelay(initial);
        policy.setUseExponentialBackOff(multiplier > 1.0);
        policy.setBackOffMultiplier(multiplier);
        policy.setMaximumRedeliveryDelay(config.get(REDELIVERY_MAXIMUM_DELAY).toMillis());
        policy.setMaximumRedeliveries(config.get(REDELIVERY_MAXIMUM_REDELIVERIES));
        return policy;
    }

    private static boolean isUri(String text) {
        try {
            return URI.create(text).getScheme() != null;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
