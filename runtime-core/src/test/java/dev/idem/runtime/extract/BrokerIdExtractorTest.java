package dev.idem.runtime.extract;

import static dev.idem.runtime.extract.Messages.create;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BrokerIdExtractorTest {

    private final IdExtractor extractor = create(new BrokerIdExtractorProvider());

    @Test
    void readsTheBrokersMessageId() {
        assertThat(extractor.extract(message("ID:broker-1:1:1:1"))).isEqualTo("ID:broker-1:1:1:1");
    }

    @Test
    void messageWithoutBrokerIdHasNoKey() {
        assertThat(extractor.extract(message(null))).isNull();
        assertThat(extractor.extract(message(""))).isNull();
    }

    private static InboundMessage message(String brokerId) {
        return new InboundMessage("orders", null, null, Map.of(), new byte[0], brokerId, false, 1);
    }
}
