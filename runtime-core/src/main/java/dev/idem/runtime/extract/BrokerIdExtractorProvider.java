package dev.idem.runtime.extract;

import dev.idem.spi.ConfigSpec;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;

/**
 * {@code broker-id}: the key is the ID the broker gave the message ({@code JMSMessageID}, the AMQP
 * {@code message-id}, Kafka's {@code topic-partition-offset}); none when the adapter has none.
 *
 * <p>It guards against redelivery of one stored message, not against a producer that sent the
 * same thing twice: each send is a new broker message with a new ID. Takes no settings.
 *
 * <p>Stateless and thread-safe, like the extractor it creates.
 */
public final class BrokerIdExtractorProvider implements IdExtractorProvider {

    @Override
    public String id() {
        return "broker-id";
    }

    @Override
    public ConfigSpec configSpec() {
        return ConfigSpec.empty();
    }

    @Override
    public IdExtractor create(PluginConfig config) {
        return BrokerIdExtractor.INSTANCE;
    }
}
