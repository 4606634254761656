package dev.idem.adapter.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.testkit.TestPluginConfig;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.junit.jupiter.api.Test;

/** The provider's declared keys, the validation of their combinations and of sources; no broker needed. */
class RocketMqAdapterProviderTest {

    private final RocketMqAdapterProvider provider = new RocketMqAdapterProvider();

    private TestPluginConfig config() {
        return TestPluginConfig.defaults("broker.rocketmq", provider.configSpec())
                .with("name-server", List.of("127.0.0.1:9876"));
    }

    @Test
    void isFoundByServiceLoaderUnderIdRocketmq() {
        assertThat(ServiceLoader.load(BrokerAdapterProvider.class).stream().map(ServiceLoader.Provider::get)
                .map(BrokerAdapterProvider::id)).contains("rocketmq");
        assertThat(provider.configSpec().names()).contains("name-server", "connect-timeout", "group-prefix",
                "access-key", "secret-key", "tls", "commit-interval", "poll-timeout", "pull-batch-size",
                "pull-threads", "dead-letter-suffix", "producer.send-timeout", "producer.retries");
    }

    @Test
    void rejectsMalformedValuesOfSingleKeysNamingThem() {
        assertThatThrownBy(() -> config().with("name-server", List.of("localhost")))
                .hasMessageContaining("broker.rocketmq.name-server").hasMessageContaining("host:port");
        assertThatThrownBy(() -> config().with("commit-interval", "1ms"))
                .hasMessageContaining("broker.rocketmq.commit-interval").hasMessageContaining("at least 10ms");
        assertThatThrownBy(() -> config().with("dead-letter-suffix", ".DLQ"))
                .hasMessageContaining("broker.rocketmq.dead-letter-suffix").hasMessageContaining("RocketMQ topic");
        assertThatThrownBy(() -> config().with("group-prefix", "billing."))
                .hasMessageContaining("broker.rocketmq.group-prefix");
        assertThatThrownBy(() -> config().with("pull-batch-size", 0)).hasMessageContaining("at least 1");
        assertThatThrownBy(() -> config().with("access-key", " ")).hasMessageContaining("must not be blank");
    }

    @Test
    void validateReportsAnAccessKeyWithoutItsSecretWithoutContactingRocketMq() {
        // Nothing listens on port 1: a validate that connected would fail differently.
        TestPluginConfig half = config().with("name-server", List.of("127.0.0.1:1")).with("access-key", "idem");
        assertThat(provider.validate(half)).extracting(ConfigProblem::path)
                .containsExactly("broker.rocketmq.secret-key");
        assertThat(provider.validate(config().with("secret-key", "s3cret"))).extracting(ConfigProblem::path)
                .containsExactly("broker.rocketmq.access-key");
        assertThat(provider.validate(config().with("access-key", "idem").with("secret-key", "s3cret"))).isEmpty();
        assertThatThrownBy(() -> provider.create(half)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("broker.rocketmq.access-key and broker.rocketmq.secret-key go together");
    }

    @Test
    void theConsumerOfAPipelineCommitsByHandStartsNewGroupsAtTheFirstOffsetAndCachesAtMostMaxInFlight() {
        RocketMqSettings settings = RocketMqSettings.from(config().with("group-prefix", "billing-")
                .with("name-server", List.of("ns-1:9876", "ns-2:9876")));
        DefaultLitePullConsumer consumer = settings.consumer("orders", 300, "idem-test-1");
        assertThat(consumer.getConsumerGroup()).isEqualTo("billing-orders");
        assertThat(consumer.isAutoCommit()).isFalse();
        assertThat(consumer.getConsumeFromWhere()).isEqualTo(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        assertThat(consumer.getNamesrvAddr()).isEqualTo("ns-1:9876;ns-2:9876");
        assertThat(consumer.getPullThresholdForAll()).isEqualTo(300);
        assertThat(consumer.getInstanceName()).isEqualTo("idem-test-1");
    }

    @Test
    void aSourceIsATopicWithAnOptionalTagOrSqlFilter() {
        assertThat(Source.parse("orders")).isEqualTo(new Source("orders", false, "*"));
        assertThat(Source.parse("orders?tag=paid||shipped")).isEqualTo(new Source("orders", false, "paid||shipped"));
        assertThat(Source.parse("orders?sql=amount > 100")).isEqualTo(new Source("orders", true, "amount > 100"));
        assertThat(Source.topicOf("orders?tag=paid")).isEqualTo("orders");
        assertThatThrownBy(() -> Source.parse("orders.eu")).isInstanceOfSatisfying(BrokerException.class,
                e -> assertThat(e.retriable()).isFalse()).hasMessageContaining("does not name a RocketMQ topic");
        assertThatThrownBy(() -> Source.parse("orders?tags=paid")).hasMessageContaining("tag=<tag expression>");
        assertThatThrownBy(() -> Source.parse("orders?sql= ")).hasMessageContaining("sql=<SQL92 expression>");
    }

    @Test
    void theSectionLoadsThroughTheConfigLoaderWithSecretsFromTheEnvironment() {
        String yaml = """
                broker:
                  type: rocketmq
                  rocketmq: { name-server: [127.0.0.1:9876], access-key: idem, secret-key: "${RMQ_SECRET}" }
                store: { type: caffeine }
                pipelines: { orders: { source: "orders?tag=paid", handler: com.example.OrderHandler } }
                """;
        IdemConfig config = ConfigLoader.parse(yaml, "idem.yaml", Map.of("RMQ_SECRET", "s3cret"),
                PluginRegistry.discover());
        RocketMqSettings settings = RocketMqSettings.from(config.broker().config());
        assertThat(settings.secretKey().reveal()).isEqualTo("s3cret");
        assertThat(settings.rpcHook()).isNotNull();
        assertThat(RocketMqSettings.from(config().with("name-server", List.of("a:1"))).rpcHook()).isNull();
    }
}
