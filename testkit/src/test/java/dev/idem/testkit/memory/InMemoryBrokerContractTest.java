package dev.idem.testkit.memory;

import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.BrokerAdapterContract;

/** The in-memory broker fixture behaves like a real broker, as far as the contract can tell. */
class InMemoryBrokerContractTest extends BrokerAdapterContract {

    private final InMemoryBroker broker = new InMemoryBroker();

    @Override
    protected BrokerAdapter createAdapter() {
        return broker.connect();
    }
}
