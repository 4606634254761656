package dev.idem.adapter.kafka;

import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.BrokerAdapterContract;
import java.util.UUID;

/** The broker adapter contract against a real single-node Kafka in this JVM. */
class KafkaAdapterContractTest extends BrokerAdapterContract {

    @Override
    protected BrokerAdapter createAdapter() {
        return KafkaTestSupport.adapter(KafkaTestSupport.config());
    }

    @Override
    protected String newDestination() {
        return "idem-contract-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Override
    protected void prepareDestination(BrokerAdapter adapter, String destination) {
        EmbeddedKafka.shared().createTopic(destination, 1);
    }

    @Override
    protected void deleteDestination(String destination) {
        EmbeddedKafka.shared().deleteTopic(destination);
    }
}
