-- Tables of dev.idem.examples.orders.TransactionalOrderPaymentHandler.
-- Portable across PostgreSQL, MariaDB/MySQL and H2. Run it once, before starting the pipeline, in the
-- database and schema of store.jdbc.url. The handler does not create them itself by default: on
-- MariaDB, MySQL and H2 any DDL commits the open transaction, which would commit the dedup claim ahead
-- of the handler's own writes (see the README).

CREATE TABLE IF NOT EXISTS order_status (
    order_id VARCHAR(64) NOT NULL PRIMARY KEY,
    status   VARCHAR(16) NOT NULL
);

CREATE TABLE IF NOT EXISTS payment_events (
    message_id VARCHAR(512)   NOT NULL,
    order_id   VARCHAR(64)    NOT NULL,
    event      VARCHAR(16)    NOT NULL,
    amount     DECIMAL(19, 2) NOT NULL,
    outcome    VARCHAR(32)    NOT NULL
);
