package dev.idem.adapter.rocketmq;

import dev.idem.testkit.TestPluginConfig;
import java.util.List;

/** Adapter configurations against the {@linkplain EmbeddedRocketMq#shared() shared name server and broker}. */
final class RocketMqTestSupport {

    private RocketMqTestSupport() {
    }

    static TestPluginConfig config() {
        return TestPluginConfig.defaults("broker.rocketmq", new RocketMqAdapterProvider().configSpec())
                .with("name-server", List.of(EmbeddedRocketMq.shared().nameServer()))
                .with("commit-interval", "100ms")
                .with("poll-timeout", "50ms");
    }

    static RocketMqAdapter adapter(TestPluginConfig config) {
        return (RocketMqAdapter) new RocketMqAdapterProvider().create(config);
    }
}
