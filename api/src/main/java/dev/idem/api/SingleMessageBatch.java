package dev.idem.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * The batch of one a {@link BatchHandler} gets when a single message is handed to it: its context is the message's
 * own, and a reported failure is thrown once the handler returns.
 */
final class SingleMessageBatch implements BatchContext {

    private final Message message;
    private final HandlerContext context;
    private Exception reported;

    SingleMessageBatch(Message message, HandlerContext context) {
        this.message = message;
        this.context = context;
    }

    @Override
    public String pipeline() {
        return context.pipeline();
    }

    @Override
    public System.Logger logger() {
        return context.logger();
    }

    @Override
    public Instant deadline() {
        return context.deadline();
    }

    @Override
    public Duration remaining() {
        return context.remaining();
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return context.transaction(type);
    }

    @Override
    public HandlerContext of(Message m) {
        requireOwn(m);
        return context;
    }

    @Override
    public void fail(Message m, Exception cause) {
        requireOwn(m);
        reported = Objects.requireNonNull(cause, "cause");
    }

    private void requireOwn(Message m) {
        if (m != message) {
            throw new IllegalArgumentException("The message is not one of this batch's messages");
        }
    }

    void rethrowReported() throws Exception {
        if (reported != null) {
            throw reported;
        }
    }
}
