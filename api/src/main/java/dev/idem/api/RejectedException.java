package dev.idem.api;

/**
 * Thrown by a handler (or by {@code dev.idem.api.guard.StateMachine#require}) when the message does not
 * apply to the entity's current state, such as "pay" for an order already cancelled. The run ends with
 * outcome {@code rejected}: the runtime logs the reason, counts it, and acks the message without
 * retrying it. In transactional mode the handler's transaction is rolled back first. A handler that wants
 * such a message looked at throws {@link NonRetryableException} instead, which dead-letters it.
 */
public class RejectedException extends IdemException {

    private static final long serialVersionUID = 1L;

    public RejectedException(String reason) {
        super(reason);
    }
}
