package dev.idem.runtime.pipeline;

import dev.idem.api.HandlerContext;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/** The context of one handler run. The wall-clock deadline is derived only when asked for. */
final class RunContext implements HandlerContext {

    private final String pipeline;
    private final System.Logger logger;
    private final long deadlineNanos;

    RunContext(String pipeline, System.Logger logger, long deadlineNanos) {
        this.pipeline = pipeline;
        this.logger = logger;
        this.deadlineNanos = deadlineNanos;
    }

    @Override
    public String pipeline() {
        return pipeline;
    }

    @Override
    public System.Logger logger() {
        return logger;
    }

    @Override
    public Instant deadline() {
        return Instant.now().plus(remaining());
    }

    @Override
    public Duration remaining() {
        return Duration.ofNanos(deadlineNanos - System.nanoTime());
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return Optional.empty();
    }
}
