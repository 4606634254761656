package dev.idem.examples.orders;

import dev.idem.api.Message;

/** Which ID a run is recorded under. */
final class MessageIds {

    /** Written when a message has neither an idempotency key nor a broker ID. */
    static final String NONE = "-";

    private MessageIds() {
    }

    /**
     * The idempotency key the runtime claimed (what "once" is counted by); for a message processed
     * unprotected ({@code missing-id: unprotected}), the broker's message ID, else {@value #NONE}.
     */
    static String of(Message message) {
        return message.idempotencyKey()
                .orElseGet(() -> message.brokerMessageId() != null ? message.brokerMessageId() : NONE);
    }
}
