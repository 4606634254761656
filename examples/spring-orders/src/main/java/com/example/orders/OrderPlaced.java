package com.example.orders;

/** The message: an order placed, as JSON. */
public record OrderPlaced(String orderId, String customer, long cents) {
}
