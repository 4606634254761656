package dev.idem.examples.orders;

import dev.idem.api.HandlerContext;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/** A run's context with an optional store transaction, here a plain JDBC connection. */
record TestContext(Object transaction) implements HandlerContext {

    static TestContext plain() {
        return new TestContext(null);
    }

    @Override
    public String pipeline() {
        return "orders";
    }

    @Override
    public System.Logger logger() {
        return System.getLogger("idem.pipeline.orders");
    }

    @Override
    public Instant deadline() {
        return Instant.now().plusSeconds(30);
    }

    @Override
    public Duration remaining() {
        return Duration.ofSeconds(30);
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return type.isInstance(transaction) ? Optional.of(type.cast(transaction)) : Optional.empty();
    }
}
