package com.example.orders;

import java.util.List;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /orders}: the orders processed so far. */
@RestController
public class OrdersController {

    private final ProcessedOrders orders;

    public OrdersController(ProcessedOrders orders) {
        this.orders = orders;
    }

    @GetMapping("/orders")
    public List<ProcessedOrder> orders() {
        return orders.findAll();
    }
}
