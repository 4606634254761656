package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.BrokerAdapterContract;

/** The broker contract on queues (plain names), against a broker started once for the suite. */
class ActiveMqAdapterContractTest extends BrokerAdapterContract {

    @Override
    protected BrokerAdapter createAdapter() {
        return TestBroker.shared().adapter();
    }
}
