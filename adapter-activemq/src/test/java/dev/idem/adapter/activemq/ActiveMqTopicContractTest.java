package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.testkit.BrokerAdapterContract;
import java.util.UUID;

/**
 * The broker contract on topics, through durable subscriptions named after the pipeline. A durable
 * subscription keeps only what is published after it exists, so each destination is subscribed once (and the
 * subscription closed) before the test publishes.
 */
class ActiveMqTopicContractTest extends BrokerAdapterContract {

    /** A durable topic subscription has no queue size to ask the broker for: {@code idem.backlog} stays empty. */
    @Override
    protected boolean reportsBacklog() {
        return false;
    }


    @Override
    protected BrokerAdapter createAdapter() {
        return TestBroker.shared().adapter();
    }

    @Override
    protected String newDestination() {
        return "topic://idem-contract-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Dead letters of a topic go to a queue, as {@link JmsDestination#defaultDeadLetter} names it: a topic keeps none. */
    @Override
    protected String newDeadLetterDestination() {
        return "queue://idem-contract-dlq-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Override
    protected void prepareDestination(BrokerAdapter adapter, String destination) {
        // The contract's receivers subscribe as pipeline "contract-<destination>".
        adapter.subscribe(new SubscriptionRequest("contract-" + destination, destination, 100, null), batch -> {
        }).close();
    }
}
