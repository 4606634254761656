package dev.idem.examples.orders;

import dev.idem.api.guard.StateMachine;

/**
 * The order life cycle both handlers guard, as far as this example goes: a {@value #CREATED} order moves to
 * {@value #PAID} on the event {@value OrderEvent#PAID}, once. The transactional handler applies it to
 * {@code order_status}; the plain handler asks it about the state it keeps in memory. A real service would
 * declare its other events here too, such as {@code .allow(PAID, "shipped", "SHIPPED")}.
 */
final class OrderStates {

    static final String CREATED = "CREATED";
    static final String PAID = "PAID";

    static final StateMachine ORDERS = StateMachine.of("order_status", "order_id", "status")
            .allow(CREATED, OrderEvent.PAID, PAID);

    private OrderStates() {
    }
}
