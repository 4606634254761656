package dev.idem.runtime.extract;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.InboundMessage;
import dev.idem.testkit.TestPluginConfig;
import java.util.Map;

/** Builds the inputs of extractor tests: messages, and extractors configured as in YAML. */
final class Messages {

    static final String PATH = "pipelines.orders.id[0]";

    private Messages() {
    }

    static InboundMessage json(String payload) {
        return payload(payload.getBytes(UTF_8));
    }

    static InboundMessage payload(byte[] payload) {
        return new InboundMessage("orders", null, null, Map.of(), payload, null, false, 1);
    }

    static InboundMessage headers(Map<String, String> headers) {
        return new InboundMessage("orders", "orders-3", "customer-7", headers, new byte[0], "orders-3-42", false, 1);
    }

    static InboundMessage message(Map<String, String> headers, String payload) {
        return new InboundMessage("orders", "orders-3", "customer-7", headers, payload.getBytes(UTF_8),
                "orders-3-42", false, 1);
    }

    /** {@code provider.create} with the given settings, e.g. {@code "pointer", "/id"}; others default. */
    static IdExtractor create(IdExtractorProvider provider, Object... settings) {
        TestPluginConfig config = TestPluginConfig.defaults(PATH, provider.configSpec());
        for (int i = 0; i < settings.length; i += 2) {
            config = config.with((String) settings[i], settings[i + 1]);
        }
        return provider.create(config);
    }
}
