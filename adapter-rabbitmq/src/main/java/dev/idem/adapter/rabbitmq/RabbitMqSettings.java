package dev.idem.adapter.rabbitmq;

import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.BINDING_KEY;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.CLIENT;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.CONNECTION_NAME;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.CONSUMERS;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.DECLARE;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.EXCHANGE;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.EXCHANGE_TYPE;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.HOST;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.PASSWORD;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.PORT;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.PREFETCH;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.QUEUE_TYPE;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.TLS_ENABLED;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.TLS_TRUSTSTORE;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.TLS_TRUSTSTORE_PASSWORD;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.TLS_VERIFY_HOSTNAME;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.URI;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.USERNAME;
import static dev.idem.adapter.rabbitmq.RabbitMqAdapterProvider.VIRTUAL_HOST;

import com.rabbitmq.client.ConnectionFactory;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import java.io.File;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The validated {@code broker.rabbitmq} section: a configured connection factory plus the consuming
 * options.
 *
 * @param factory connection factory with endpoint, credentials, TLS and client settings applied
 * @param endpoint where RabbitMQ is, without credentials, for messages
 * @param prefetch the per-channel prefetch, or {@code null} to derive it from max-in-flight
 */
record RabbitMqSettings(ConnectionFactory factory, String endpoint, String connectionName, Integer prefetch,
        int consumers, boolean declare, String queueType, String exchange, String exchangeType, String bindingKey) {

    /**
     * @throws ConfigException with every contradiction found
     */
    static RabbitMqSettings from(PluginConfig config) {
        List<ConfigProblem> problems = new ArrayList<>();
        RabbitMqSettings settings = build(config, problems);
        ConfigProblem.throwIfAny(problems);
        return settings;
    }

    /** Every contradiction {@link #from} would refuse, without connecting. */
    static List<ConfigProblem> problems(PluginConfig config) {
        List<ConfigProblem> problems = new ArrayList<>();
        build(config, problems);
        return problems;
    }

    /** The settings, or {@code null} when anything was added to {@code problems}. */
    private static RabbitMqSettings build(PluginConfig config, List<ConfigProblem> problems) {
        String path = config.path();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setAutomaticRecoveryEnabled(false);
        factory.setTopologyRecoveryEnabled(false);
        String uri = config.get(URI);
        boolean tls = config.get(TLS_ENABLED);
        if (uri != null) {
            for (var key : List.of(HOST, VIRTUAL_HOST)) {
                if (config.get(key) != null) {
                    problems.add(new ConfigProblem(path + "." + key.name(), path + "." + key.name() + " is set together"
                            + " with " + path + ".uri: give either uri, or host, port and virtual-host"));
                }
            }
            if (config.get(PORT) != null) {
                problems.add(new ConfigProblem(path + ".port", path + ".port is set together with " + path + ".uri:"
                        + " give either uri, or host, port and virtual-host"));
            }
            try {
                factory.setUri(uri);
            } catch (Exception e) {
                problems.add(ConfigProblem.invalid(path + ".uri", masked(uri), e.getMessage()));
            }
            tls |= uri.startsWith("amqps://");
        } else {
            factory.setHost(config.get(HOST) != null ? config.get(HOST) : "127.0.0.1");
            factory.setPort(config.get(PORT) != null ? config.get(PORT) : tls ? 5671 : 5672);
            factory.setVirtualHost(config.get(VIRTUAL_HOST) != null ? config.get(VIRTUAL_HOST) : "/");
        }
        if (config.get(USERNAME) != null) {
            factory.setUsername(config.get(USERNAME));
        }
        if (config.get(PASSWORD) != null) {
            factory.setPassword(config.get(PASSWORD).reveal());
        }
        if (tls) {
            tls(config, factory, problems);
        } else if (config.get(TLS_TRUSTSTORE) != null) {
            problems.add(new ConfigProblem(path + ".tls.truststore", path + ".tls.truststore is set but TLS is off:"
                    + " set " + path + ".tls.enabled: true or use an amqps:// uri"));
        }
        ClientSettings.apply(config.get(CLIENT), factory, path + "." + CLIENT.name(), problems);
        if (config.get(EXCHANGE) != null && !config.get(DECLARE)) {
            problems.add(new ConfigProblem(path + ".exchange", path + ".exchange is set but " + path + ".declare is"
                    + " false: the binding is only declared with declare: true"));
        }
        if (!problems.isEmpty()) {
            return null;
        }
        String endpoint = (tls ? "amqps://" : "amqp://") + factory.getHost() + ":" + factory.getPort()
                + " (virtual host '" + factory.getVirtualHost() + "')";
        return new RabbitMqSettings(factory, endpoint, config.get(CONNECTION_NAME), config.get(PREFETCH),
                config.get(CONSUMERS), config.get(DECLARE), config.get(QUEUE_TYPE), config.get(EXCHANGE),
                config.get(EXCHANGE_TYPE), config.get(BINDING_KEY));
    }

    /** The prefetch per channel for a subscription of {@code maxInFlight}. */
    int prefetchFor(int maxInFlight) {
        if (prefetch != null) {
            return prefetch;
        }
        return Math.max(1, Math.min(65_535, maxInFlight / consumers));
    }

    private static void tls(PluginConfig config, ConnectionFactory factory, List<ConfigProblem> problems) {
        String path = config.path();
        String truststore = config.get(TLS_TRUSTSTORE);
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            if (truststore == null) {
                context.init(null, null, null);
            } else {
                File file = new File(truststore);
                if (!file.canRead()) {
                    problems.add(ConfigProblem.invalid(path + ".tls.truststore", truststore,
                            "must be a readable PKCS12 or JKS file"));
                    return;
                }
                Secret password = config.get(TLS_TRUSTSTORE_PASSWORD);
                KeyStore store = KeyStore.getInstance(file, password == null ? null : password.reveal().toCharArray());
                TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(store);
                context.init(null, trust.getTrustManagers(), null);
            }
            factory.useSslProtocol(context);
            if (config.get(TLS_VERIFY_HOSTNAME)) {
                factory.enableHostnameVerification();
            }
        } catch (Exception e) {
            problems.add(ConfigProblem.invalid(path + ".tls.truststore", String.valueOf(truststore),
                    "could not be loaded (" + e.getMessage() + "); check tls.truststore-password"));
        }
    }

    /** The URI with any password masked. */
    static String masked(String uri) {
        return Secret.maskCredentials(uri);
    }
}
