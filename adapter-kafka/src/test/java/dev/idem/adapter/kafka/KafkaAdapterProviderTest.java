package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.testkit.TestPluginConfig;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The provider's declared keys and the validation of their combinations; no broker needed. */
class KafkaAdapterProviderTest {

    private final KafkaAdapterProvider provider = new KafkaAdapterProvider();

    private TestPluginConfig config() {
        return TestPluginConfig.defaults("broker.kafka", provider.configSpec())
                .with("bootstrap-servers", List.of("127.0.0.1:9092"));
    }

    @Test
    void isFoundByServiceLoaderUnderIdKafka() {
        assertThat(ServiceLoader.load(BrokerAdapterProvider.class).stream().map(ServiceLoader.Provider::get)
                .map(BrokerAdapterProvider::id)).contains("kafka");
        assertThat(provider.configSpec().names()).contains("bootstrap-servers", "group-id-prefix", "group-instance-id",
                "client",
                "commit-interval", "poll-timeout", "revoke-timeout", "dead-letter-suffix", "sasl.password",
                "tls.truststore-location", "tls.keystore-password");
    }

    @Test
    void rejectsMalformedValuesOfSingleKeys() {
        assertThatThrownBy(() -> config().with("bootstrap-servers", List.of("localhost")))
                .hasMessageContaining("broker.kafka.bootstrap-servers").hasMessageContaining("host:port");
        assertThatThrownBy(() -> config().with("commit-interval", "1ms"))
                .hasMessageContaining("broker.kafka.commit-interval").hasMessageContaining("at least 10ms");
        assertThatThrownBy(() -> config().with("security.protocol", "SASL_SSL"))
                .hasMessageContaining("sasl-ssl");
        assertThatThrownBy(() -> config().with("revoke-timeout", "10m")).hasMessageContaining("at most 4m");
    }

    @Test
    void collectsEveryContradictionIntoOneError() {
        TestPluginConfig bad = config()
                .with("client", Map.of("group.id", "mine", "enable.auto.commit", "true", "max.pol.records", "5"))
                .with("sasl.username", "alice")
                .with("tls.truststore-location", "/etc/kafka/trust.p12");
        assertThatThrownBy(() -> provider.create(bad))
                .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).hasSize(5)
                        .anySatisfy(p -> assertThat(p).startsWith("broker.kafka.client.group.id cannot be set")
                                .contains("group-id-prefix"))
                        .anySatisfy(p -> assertThat(p).startsWith("broker.kafka.client.enable.auto.commit"))
                        .anySatisfy(p -> assertThat(p).startsWith("broker.kafka.client.max.pol.records is not a"))
                        .anySatisfy(p -> assertThat(p).contains("sasl.username").contains("sasl-ssl"))
                        .anySatisfy(p -> assertThat(p).contains("tls.").contains("use ssl or sasl-ssl")));
    }

    @Test
    void validateReportsEachContradictionWithItsPathWithoutContactingKafka() {
        // Nothing listens on port 1: a validate that connected would fail differently.
        TestPluginConfig bad = config().with("bootstrap-servers", List.of("127.0.0.1:1"))
                .with("client", Map.of("max.pol.records", "5"))
                .with("sasl.username", "alice");

        assertThat(provider.validate(bad)).extracting(ConfigProblem::path)
                .containsExactlyInAnyOrder("broker.kafka.client.max.pol.records", "broker.kafka.security.protocol");
        assertThat(provider.validate(config().with("bootstrap-servers", List.of("127.0.0.1:1")))).isEmpty();
    }

    @Test
    void groupInstanceIdMakesTheConsumerOfEachPipelineAStaticMember() {
        KafkaSettings settings = KafkaSettings.from(config().with("group-instance-id", "idem-7f9c-x2b4d")
                .with("group-id-prefix", "billing-"));

        assertThat(settings.consumer("orders", 100)).containsEntry("group.id", "billing-orders")
                .containsEntry("group.instance.id", "idem-7f9c-x2b4d");
        assertThat(settings.consumer("refunds", 100)).as("one id serves every pipeline: each has its own group")
                .containsEntry("group.id", "billing-refunds").containsEntry("group.instance.id", "idem-7f9c-x2b4d");
        assertThat(settings.producer()).doesNotContainKey("group.instance.id");
        assertThat(KafkaSettings.from(config()).consumer("orders", 100)).as("dynamic membership when unset")
                .doesNotContainKey("group.instance.id");
    }

    @Test
    void rejectsABlankOrMalformedGroupInstanceIdNamingTheKey() {
        assertThatThrownBy(() -> config().with("group-instance-id", "  "))
                .hasMessage("Invalid value '  ' for broker.kafka.group-instance-id: must not be blank");
        assertThatThrownBy(() -> config().with("group-instance-id", ""))
                .hasMessage("Invalid value '' for broker.kafka.group-instance-id: must not be blank");
        assertThatThrownBy(() -> config().with("group-instance-id", "host 1"))
                .hasMessageContaining("broker.kafka.group-instance-id")
                .hasMessageContaining("letters, digits, '.', '_' or '-'");
    }

    @Test
    void groupInstanceIdComesFromTheEnvironmentThroughTheConfigLoader() {
        String yaml = """
                broker: { type: kafka, kafka: { bootstrap-servers: [127.0.0.1:9092], group-instance-id: "%s" } }
                store: { type: caffeine }
                pipelines: { orders: { source: orders, handler: com.example.OrderHandler } }
                """;
        assertThat(instanceId(yaml.formatted("${HOSTNAME}"), Map.of("HOSTNAME", "idem-0"))).isEqualTo("idem-0");
        assertThat(instanceId(yaml.formatted("${HOSTNAME:-}"), Map.of())).as("absent: dynamic membership").isNull();
        assertThatThrownBy(() -> instanceId(yaml.formatted("${HOSTNAME}"), Map.of("HOSTNAME", " ")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("broker.kafka.group-instance-id").hasMessageContaining("must not be blank");
        assertThatThrownBy(() -> instanceId(yaml.formatted("${HOSTNAME}"), Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("HOSTNAME");
    }

    private String instanceId(String yaml, Map<String, String> env) {
        IdemConfig config = ConfigLoader.parse(yaml, "idem.yaml", env, PluginRegistry.discover());
        return KafkaSettings.from(config.broker().config()).groupInstanceId();
    }

    @Test
    void theClientMapCannotSetGroupInstanceIdAndPointsToTheKey() {
        TestPluginConfig bad = config().with("client", Map.of("group.instance.id", "host-1"));

        assertThat(provider.validate(bad)).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("broker.kafka.client.group.instance.id");
            assertThat(p.toString()).contains("use broker.kafka.group-instance-id");
        });
    }

    @Test
    void saslNeedsBothUserAndPassword() {
        TestPluginConfig half = config().with("security.protocol", "sasl-ssl").with("sasl.username", "alice");
        assertThatThrownBy(() -> provider.create(half)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("broker.kafka.sasl.username and broker.kafka.sasl.password go together");
    }

    @Test
    void buildsClientSettingsWithSecretsAndTheUsersNativeKeys() {
        KafkaSettings settings = KafkaSettings.from(config()
                .with("group-id-prefix", "billing-")
                .with("security.protocol", "sasl-ssl")
                .with("sasl.mechanism", "scram-sha-512")
                .with("sasl.username", "alice")
                .with("sasl.password", "s3cret")
                .with("tls.truststore-location", "/etc/kafka/trust.p12")
                .with("tls.truststore-password", "changeit")
                .with("client", Map.of("max.poll.records", "50", "linger.ms", "20",
                        "partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor")));

        Map<String, Object> consumer = settings.consumer("orders", 1000);
        assertThat(consumer).containsEntry("group.id", "billing-orders")
                .containsEntry("enable.auto.commit", false)
                .containsEntry("max.poll.records", "50")
                .containsEntry("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor")
                .containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                .containsEntry("ssl.truststore.password", "changeit")
                .doesNotContainKey("linger.ms");
        assertThat((String) consumer.get("sasl.jaas.config")).contains("ScramLoginModule")
                .contains("username=\"alice\"").contains("password=\"s3cret\"");
        assertThat(settings.consumer("orders", 20)).as("max.poll.records from maxInFlight unless set")
                .containsEntry("max.poll.records", "50");
        assertThat(KafkaSettings.from(config()).consumer("orders", 20)).containsEntry("max.poll.records", 20)
                .containsEntry("group.id", "orders")
                .containsEntry("partition.assignment.strategy",
                        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

        Map<String, Object> producer = settings.producer();
        assertThat(producer).containsEntry("acks", "all").containsEntry("enable.idempotence", true)
                .containsEntry("linger.ms", "20").doesNotContainKey("max.poll.records");
    }
}
