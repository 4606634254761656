package dev.idem.examples.orders;

import dev.idem.handlertest.TestContext;
import dev.idem.handlertest.TestMessage;

/** The order events of the tests, as the kit's messages. */
final class Orders {

    private Orders() {
    }

    /** The context of a run in pipeline {@code orders}, which the handlers' messages name. */
    static TestContext context() {
        return TestContext.plain().inPipeline("orders");
    }

    /** A {@code paid} event of {@code orderId}, keyed by {@code messageId}. */
    static TestMessage paid(String messageId, String orderId, String amount) {
        return TestMessage.of(messageId,
                "{\"orderId\":\"" + orderId + "\",\"event\":\"paid\",\"amount\":\"" + amount + "\"}");
    }
}
