package com.example.orders;

import org.springframework.data.repository.ListCrudRepository;

/** Spring Data JDBC's repository of processed orders. */
public interface ProcessedOrders extends ListCrudRepository<ProcessedOrder, String> {
}
