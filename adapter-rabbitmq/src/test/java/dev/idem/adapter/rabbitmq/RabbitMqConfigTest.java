package dev.idem.adapter.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.testkit.TestPluginConfig;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The declared keys: defaults, what each rejects, and contradictions between keys. */
class RabbitMqConfigTest {

    private static TestPluginConfig defaults() {
        return TestPluginConfig.defaults("broker.rabbitmq", new RabbitMqAdapterProvider().configSpec());
    }

    @Test
    void providerIsFoundThroughServiceLoaderUnderItsId() {
        assertThat(ServiceLoader.load(BrokerAdapterProvider.class).stream().map(p -> p.get().id()))
                .contains("rabbitmq");
    }

    @Test
    void defaultsConnectToLocalhostAndDerivePrefetchFromMaxInFlight() {
        RabbitMqSettings settings = RabbitMqSettings.from(defaults());
        assertThat(settings.factory().getHost()).isEqualTo("127.0.0.1");
        assertThat(settings.factory().getPort()).isEqualTo(5672);
        assertThat(settings.factory().getVirtualHost()).isEqualTo("/");
        assertThat(settings.factory().isAutomaticRecoveryEnabled()).as("the adapter recovers itself").isFalse();
        assertThat(settings.prefetchFor(1000)).isEqualTo(1000);
        assertThat(RabbitMqSettings.from(defaults().with("consumers", 4)).prefetchFor(1000)).isEqualTo(250);
        assertThat(RabbitMqSettings.from(defaults().with("consumers", 4)).prefetchFor(2)).isEqualTo(1);
        assertThat(RabbitMqSettings.from(defaults().with("prefetch", 10)).prefetchFor(1000)).isEqualTo(10);
        assertThat(RabbitMqSettings.from(defaults()).prefetchFor(1_000_000)).isEqualTo(65_535);
    }

    @Test
    void uriSetsEndpointVirtualHostAndCredentials() {
        RabbitMqSettings settings = RabbitMqSettings.from(defaults()
                .with("uri", "amqp://app:s3cret@rabbit.example:5673/orders").with("password", "other"));
        assertThat(settings.factory().getHost()).isEqualTo("rabbit.example");
        assertThat(settings.factory().getPort()).isEqualTo(5673);
        assertThat(settings.factory().getVirtualHost()).isEqualTo("orders");
        assertThat(settings.factory().getUsername()).isEqualTo("app");
        assertThat(settings.factory().getPassword()).as("the password key overrides the uri's").isEqualTo("other");
        assertThat(settings.endpoint()).doesNotContain("s3cret").contains("rabbit.example:5673");
    }

    @Test
    void clientSettingsPassThroughToTheConnectionFactory() {
        RabbitMqSettings settings = RabbitMqSettings.from(defaults().with("client", Map.of(
                "requested-heartbeat", "7s", "connection-timeout", "2500ms", "requested-channel-max", 100)));
        assertThat(settings.factory().getRequestedHeartbeat()).isEqualTo(7);
        assertThat(settings.factory().getConnectionTimeout()).isEqualTo(2500);
        assertThat(settings.factory().getRequestedChannelMax()).isEqualTo(100);
    }

    @Test
    void everyContradictionAndBadClientSettingIsReportedInOneError() {
        TestPluginConfig config = defaults()
                .with("uri", "amqp://127.0.0.1:5672/%2F")
                .with("host", "other-host")
                .with("client", Map.of("heartbeat", "10", "connection-timeout", "soon"))
                .with("tls.truststore", "/etc/idem/trust.p12")
                .with("declare", false)
                .with("exchange", "orders");
        assertThatThrownBy(() -> RabbitMqSettings.from(config))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactlyInAnyOrder(
                        "broker.rabbitmq.host is set together with broker.rabbitmq.uri: give either uri, or host, "
                                + "port and virtual-host",
                        "Unknown key broker.rabbitmq.client.heartbeat: the RabbitMQ client settings accepted here are "
                                + "[requested-heartbeat, connection-timeout, handshake-timeout, shutdown-timeout, "
                                + "channel-rpc-timeout, requested-channel-max, requested-frame-max]",
                        "Invalid value 'soon' for broker.rabbitmq.client.connection-timeout: must be a duration such "
                                + "as 500ms, 30s, 5m, 2h, 7d or ISO-8601 PT30S",
                        "broker.rabbitmq.tls.truststore is set but TLS is off: set broker.rabbitmq.tls.enabled: true "
                                + "or use an amqps:// uri",
                        "broker.rabbitmq.exchange is set but broker.rabbitmq.declare is false: the binding is only "
                                + "declared with declare: true"));
    }

    @Test
    void validateReportsWhatCreateWouldRefuseWithEachPathWithoutConnecting() {
        // Nothing listens on port 1: a validate that connected would fail differently.
        TestPluginConfig config = defaults().with("port", 1)
                .with("client", Map.of("heartbeat", "10", "handshake-timeout", "-1s"));

        assertThat(new RabbitMqAdapterProvider().validate(config)).extracting(ConfigProblem::path, ConfigProblem::message)
                .containsExactlyInAnyOrder(
                        tuple("broker.rabbitmq.client.heartbeat", "Unknown key broker.rabbitmq.client.heartbeat: the"
                                + " RabbitMQ client settings accepted here are [requested-heartbeat, connection-timeout,"
                                + " handshake-timeout, shutdown-timeout, channel-rpc-timeout, requested-channel-max,"
                                + " requested-frame-max]"),
                        tuple("broker.rabbitmq.client.handshake-timeout", "Invalid value '-1s' for"
                                + " broker.rabbitmq.client.handshake-timeout: must not be negative"));
        assertThat(new RabbitMqAdapterProvider().validate(defaults().with("port", 1)
                .with("client", Map.of("requested-heartbeat", "10s")))).isEmpty();
    }

    @Test
    void declaredKeysRejectValuesOutsideTheirRules() {
        assertThatThrownBy(() -> defaults().with("queue-type", "stream"))
                .hasMessage("Invalid value 'stream' for broker.rabbitmq.queue-type: must be one of [classic, quorum]");
        assertThatThrownBy(() -> defaults().with("prefetch", 0))
                .hasMessage("Invalid value '0' for broker.rabbitmq.prefetch: must be at least 1");
        assertThatThrownBy(() -> defaults().with("uri", "http://127.0.0.1:5672"))
                .hasMessageStartingWith("Invalid value 'http://127.0.0.1:5672' for broker.rabbitmq.uri: must be an "
                        + "AMQP URI");
        assertThatThrownBy(() -> defaults().with("retry.mode", "delay-queue"))
                .hasMessage("Invalid value 'delay-queue' for broker.rabbitmq.retry.mode: must be one of [requeue]");
    }

    @Test
    void unreadableTruststoreIsAConfigError() {
        assertThatThrownBy(() -> RabbitMqSettings.from(defaults().with("tls.enabled", true)
                .with("tls.truststore", "/nonexistent/trust.p12")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("Invalid value '/nonexistent/trust.p12' for broker.rabbitmq.tls.truststore: must "
                        + "be a readable PKCS12 or JKS file");
    }

    @Test
    void tlsIsOnForAmqpsAndVerifiesTheHostnameByDefault() {
        RabbitMqSettings settings = RabbitMqSettings.from(defaults().with("uri", "amqps://rabbit.example/%2F"));
        assertThat(settings.factory().isSSL()).isTrue();
        assertThat(settings.factory().getPort()).isEqualTo(5671);
        assertThat(settings.endpoint()).startsWith("amqps://rabbit.example:5671");
    }

    @Test
    void wrongPasswordIsANonRetriableBrokerErrorThatNeverShowsThePassword() {
        TestPluginConfig config = RabbitMqTestBroker.config().with("username", "guest").with("password", "wrong-pw");
        assertThatThrownBy(() -> new RabbitMqAdapterProvider().create(config))
                .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("refused the login of user 'guest'")
                .hasMessageNotContaining("wrong-pw");
    }

    @Test
    void unreachableBrokerIsARetriableBrokerErrorNamingTheEndpoint() {
        TestPluginConfig config = defaults().with("host", "127.0.0.1").with("port", 1)
                .with("client", Map.of("connection-timeout", "1s"));
        assertThatThrownBy(() -> new RabbitMqAdapterProvider().create(config))
                .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                .hasMessageContaining("Cannot connect to RabbitMQ at amqp://127.0.0.1:1 (virtual host '/')");
    }
}
