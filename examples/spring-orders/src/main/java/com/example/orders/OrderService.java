package com.example.orders;

import java.time.Instant;
import org.springframework.data.jdbc.core.JdbcAggregateTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * The application's own service, unaware of Idem: {@code @Transactional} as any service is. Called from the handler
 * in transactional mode, it joins the handler's transaction, so the order's row commits with the message's key.
 */
@Service
public class OrderService {

    private final JdbcAggregateTemplate jdbc;

    public OrderService(JdbcAggregateTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Transactional
    public void record(OrderPlaced order) {
        if (order.cents() <= 0) {
            throw new IllegalArgumentException("Order " + order.orderId() + " has no amount");
        }
        // insert, not save: the ID is the order's own, so Spring Data cannot tell a new row from an update.
        jdbc.insert(new ProcessedOrder(order.orderId(), order.customer(), order.cents(), Instant.now()));
    }
}
