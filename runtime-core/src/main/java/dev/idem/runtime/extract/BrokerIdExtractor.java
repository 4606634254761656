package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;

/** Reads {@link InboundMessage#brokerMessageId()}; see {@link BrokerIdExtractorProvider}. */
final class BrokerIdExtractor implements IdExtractor {

    static final BrokerIdExtractor INSTANCE = new BrokerIdExtractor();

    private BrokerIdExtractor() {
    }

    @Override
    public String extract(InboundMessage message) {
        return Values.present(message.brokerMessageId());
    }

    @Override
    public String toString() {
        return "broker-id";
    }
}
