package com.example.orders;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.TypedHandler;
import dev.idem.spring.boot.IdemHandler;
import org.springframework.stereotype.Component;

/**
 * The {@code orders} pipeline's handler, a bean like any other. Idem hands it each order once its key is claimed;
 * in transactional mode the row {@link OrderService} writes and the key commit together, so an order redelivered
 * after a crash, or published twice, is recorded once.
 */
@Component
@IdemHandler("orders")
public class OrderPlacedHandler implements TypedHandler<OrderPlaced> {

    private final OrderService orders;

    public OrderPlacedHandler(OrderService orders) {
        this.orders = orders;
    }

    @Override
    public void handle(OrderPlaced order, Message message, HandlerContext context) {
        orders.record(order);
    }
}
