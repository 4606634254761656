package dev.idem.adapter.rocketmq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.BrokerAdapterContract;
import java.util.UUID;

/** The broker adapter contract against a real RocketMQ name server and broker in this JVM. */
class RocketMqAdapterContractTest extends BrokerAdapterContract {

    @Override
    protected BrokerAdapter createAdapter() {
        return RocketMqTestSupport.adapter(RocketMqTestSupport.config());
    }

    @Override
    protected String newDestination() {
        return "idem-contract-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Override
    protected void prepareDestination(BrokerAdapter adapter, String destination) {
        EmbeddedRocketMq.shared().createTopic(destination, 1);
    }

    @Override
    protected void deleteDestination(String destination) {
        EmbeddedRocketMq.shared().deleteTopic(destination);
    }
}
