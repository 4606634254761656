package dev.idem.adapter.kafka;

import dev.idem.testkit.TestPluginConfig;
import java.util.List;

/** Adapter configurations against the {@linkplain EmbeddedKafka#shared() shared broker}. */
final class KafkaTestSupport {

    private KafkaTestSupport() {
    }

    static TestPluginConfig config() {
        return TestPluginConfig.defaults("broker.kafka", new KafkaAdapterProvider().configSpec())
                .with("bootstrap-servers", List.of(EmbeddedKafka.shared().bootstrapServers()))
                .with("commit-interval", "100ms")
                .with("poll-timeout", "100ms")
                .with("revoke-timeout", "2s");
    }

    static KafkaAdapter adapter(TestPluginConfig config) {
        return (KafkaAdapter) new KafkaAdapterProvider().create(config);
    }
}
