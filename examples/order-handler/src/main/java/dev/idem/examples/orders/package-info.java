/**
 * Example handlers for Idem, built against {@code idem-api} alone: {@link dev.idem.examples.orders.OrderPaymentHandler}
 * for a plain pipeline (a ledger file with a state-machine guard) and
 * {@link dev.idem.examples.orders.TransactionalOrderPaymentHandler} for a transactional pipeline on the JDBC store.
 * Both are typed handlers of the record {@link dev.idem.examples.orders.OrderEvent}, which the runtime decodes from
 * events such as {@code {"orderId":"o-17","event":"paid","amount":"12.50"}}. See the project's README.
 */
package dev.idem.examples.orders;
