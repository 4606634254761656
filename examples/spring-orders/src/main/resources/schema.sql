CREATE TABLE IF NOT EXISTS processed_order (
    order_id     text        PRIMARY KEY,
    customer     text        NOT NULL,
    cents        bigint      NOT NULL,
    processed_at timestamptz NOT NULL
);
