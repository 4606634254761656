package dev.idem.runtime.internal.pipeline;

import dev.idem.api.BatchContext;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import java.time.Duration;
import java.time.Instant;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The context of one batch handler run: the run's deadline and transaction, shared by its messages, and each
 * message's own {@link RunContext}; collects the failures the handler reports per message.
 */
final class BatchRunContext implements BatchContext {

    private final String pipeline;
    private final System.Logger logger;
    private final List<RunContext> contexts;
    private final Map<Message, Integer> index;
    private final Exception[] reported;
    private int reportedCount;

    /** {@code messages} and {@code contexts} side by side, one per work of the batch. */
    BatchRunContext(String pipeline, System.Logger logger, List<? extends Message> messages,
            List<RunContext> contexts) {
        this.pipeline = pipeline;
        this.logger = logger;
        this.contexts = contexts;
        this.index = new IdentityHashMap<>(messages.size() * 2);
        for (int i = 0; i < messages.size(); i++) {
            index.put(messages.get(i), i);
        }
        this.reported = new Exception[messages.size()];
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
        return contexts.get(0).deadline();
    }

    @Override
    public Duration remaining() {
        return contexts.get(0).remaining();
    }

    @Override
    public <T> Optional<T> transaction(Class<T> type) {
        return contexts.get(0).transaction(type);
    }

    @Override
    public HandlerContext of(Message message) {
        return contexts.get(indexOf(message));
    }

    @Override
    public void fail(Message message, Exception cause) {
        Objects.requireNonNull(cause, "cause");
        int i = indexOf(message);
        if (reported[i] == null) {
            reportedCount++;
        }
        reported[i] = cause;
    }

    /** What the handler reported for the {@code i}th message, or {@code null}. */
    Exception reported(int i) {
        return reported[i];
    }

    /** Whether the handler reported any message as failed. */
    boolean anyReported() {
        return reportedCount > 0;
    }

    private int indexOf(Message message) {
        Integer i = index.get(message);
        if (i == null) {
            throw new IllegalArgumentException("The message is not one of this batch's messages (pipeline '"
                    + pipeline + "')");
        }
        return i;
    }
}
