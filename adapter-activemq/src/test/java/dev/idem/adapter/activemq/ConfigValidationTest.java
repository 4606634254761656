package dev.idem.adapter.activemq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** What users read when their {@code broker.activemq} section is wrong. */
class ConfigValidationTest {

    @Test
    void providerIsFoundByServiceLoaderUnderItsId() {
        assertThat(ServiceLoader.load(BrokerAdapterProvider.class).stream()
                .map(p -> p.get().id())).contains("activemq");
    }

    @Test
    void everyKeyIsDocumented() {
        for (ConfigKey<?> key : new ActiveMqBrokerAdapterProvider().configSpec().keys()) {
            assertThat(key.doc()).as(key.name()).isNotBlank();
        }
    }

    @Test
    void unknownClientPropertyIsNamedWithItsPath() {
        assertThatThrownBy(() -> TestBroker.adapter(TestBroker.defaults()
                .with("client", Map.of("sendTimout", "1000", "prefetchPolicy", Map.of("queuePrefetch", 5)))))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("Unknown key broker.activemq.client.sendTimout: not a property of "
                        + "ActiveMQConnectionFactory")
                .hasMessageContaining("broker.activemq.client.prefetchPolicy.queuePrefetch is set by the adapter; "
                        + "use prefetch");
    }

    @Test
    void clientPropertyWithAValueOfTheWrongTypeIsRejected() {
        assertThatThrownBy(() -> TestBroker.adapter(TestBroker.defaults()
                .with("client", Map.of("sendTimeout", "soon"))))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("Invalid value 'soon' for broker.activemq.client.sendTimeout");
    }

    @Test
    void contradictingKeysAreReportedTogether() {
        assertThatThrownBy(() -> TestBroker.adapter(TestBroker.defaults()
                .with("url", "tcp://127.0.0.1:1")
                .with("password", "secret")
                .with("embedded.listen", "tcp://127.0.0.1:61616")
                .with("tls.trust-store", "/nonexistent/truststore.p12")))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
                        "broker.activemq.password is set but broker.activemq.username is not: give both, or neither",
                        "broker.activemq.embedded.listen is set but broker.activemq.embedded.enabled is false: "
                                + "enable the embedded broker, or remove embedded.listen",
                        "broker.activemq.tls.* is set but broker.activemq.url 'tcp://127.0.0.1:1' uses no ssl:// "
                                + "transport: write ssl://host:61617 (or failover:(ssl://...)) to use it",
                        "Invalid value '/nonexistent/truststore.p12' for broker.activemq.tls.trust-store: must be a "
                                + "readable key store file (or a URL)"))
                .hasMessageNotContaining("secret");
    }

    @Test
    void validateReportsWhatCreateWouldRefuseWithPathsAndWithoutConnecting() {
        // Nothing listens on port 1: a validate that connected would fail differently.
        var config = TestBroker.defaults().with("url", "tcp://127.0.0.1:1").with("password", "secret")
                .with("client", Map.of("sendTimout", "1000", "closeTimeout", "later"));

        assertThat(new ActiveMqBrokerAdapterProvider().validate(config)).extracting(ConfigProblem::path)
                .containsExactlyInAnyOrder("broker.activemq.password", "broker.activemq.client.sendTimout",
                        "broker.activemq.client.closeTimeout");
        assertThat(new ActiveMqBrokerAdapterProvider().validate(config)).extracting(ConfigProblem::message)
                .contains("Unknown key broker.activemq.client.sendTimout: not a property of ActiveMQConnectionFactory"
                        + " (see the ActiveMQ connection factory's properties, e.g. sendTimeout, closeTimeout,"
                        + " optimizeAcknowledge, redeliveryPolicy.useExponentialBackOff)")
                .contains("Invalid value 'later' for broker.activemq.client.closeTimeout: the property"
                        + " ActiveMQConnectionFactory.closeTimeout does not accept it");
        assertThat(new ActiveMqBrokerAdapterProvider().validate(TestBroker.defaults().with("url", "tcp://127.0.0.1:1")
                .with("client", Map.of("sendTimeout", "1000")))).isEmpty();
    }

    @Test
    void keyRulesRejectOutOfRangeValues() {
        assertThatThrownBy(() -> TestBroker.defaults().with("prefetch", 500))
                .hasMessage("Invalid value '500' for broker.activemq.prefetch: must be at most 200");
        assertThatThrownBy(() -> TestBroker.defaults().with("url", "not a url"))
                .hasMessageStartingWith("Invalid value 'not a url' for broker.activemq.url: must be an ActiveMQ broker URL");
        assertThatThrownBy(() -> TestBroker.defaults().with("embedded.broker-name", "a/b"))
                .hasMessageContaining("must be letters, digits");
    }

    @Test
    void unreachableBrokerIsARetriableBrokerExceptionNamingTheUrl() {
        assertThatThrownBy(() -> TestBroker.adapter(TestBroker.defaults().with("url", "tcp://127.0.0.1:1")))
                .isInstanceOfSatisfying(BrokerException.class, e -> assertThat(e.retriable()).isTrue())
                .hasMessageContaining("Cannot connect to ActiveMQ at tcp://127.0.0.1:1");
    }

    @Test
    void invalidDestinationNamesSayWhatIsAccepted() {
        assertThatThrownBy(() -> JmsDestination.parse("topic://"))
                .isInstanceOf(BrokerException.class)
                .hasMessageContaining("write queue://<name>, topic://<name> or a plain queue name");
    }
}
