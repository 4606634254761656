package com.example.orders;

import java.time.Instant;
import org.springframework.data.annotation.Id;

/** An order this application processed: one row per order, written in the handler's transaction. */
public record ProcessedOrder(@Id String orderId, String customer, long cents, Instant processedAt) {
}
