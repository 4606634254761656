package dev.idem.adapter.rabbitmq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.BrokerAdapterContract;
import org.junit.jupiter.api.BeforeAll;

/** The broker adapter contract against the test RabbitMQ, with the adapter declaring its queues. */
class RabbitMqAdapterContractTest extends BrokerAdapterContract {

    @BeforeAll
    static void locateBroker() {
        RabbitMqTestBroker.url();
    }

    @Override
    protected BrokerAdapter createAdapter() {
        return RabbitMqTestBroker.adapter(RabbitMqTestBroker.config());
    }

    @Override
    protected String newDestination() {
        return RabbitMqTestBroker.uniqueQueue("idem-contract");
    }

    @Override
    protected void prepareDestination(BrokerAdapter adapter, String destination) {
        RabbitMqTestBroker.declare(destination);
    }

    @Override
    protected void deleteDestination(String destination) {
        RabbitMqTestBroker.delete(destination);
        RabbitMqTestBroker.delete(destination + ".DLQ");
    }
}
