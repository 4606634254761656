package dev.idem.runtime;

import dev.idem.spi.InboundMessage;

/**
 * Told of every message outcome a pipeline counts ({@code processed}, {@code duplicate},
 * {@code dead-lettered}, {@code retried}, ...: the {@code outcome} tag of {@code idem.messages}). For
 * tools that show single messages, such as {@code idem demo}; metrics cover the rest.
 *
 * <p>Called from pipeline threads, concurrently, on the message path: implementations are thread-safe
 * and quick. An exception it throws is logged and otherwise ignored.
 */
@FunctionalInterface
public interface OutcomeListener {

    /**
     * @param pipeline the pipeline's name
     * @param outcome the outcome, as in the {@code outcome} tag
     * @param message the message
     * @param key its idempotency key, or {@code null} when it has none
     */
    void onOutcome(String pipeline, String outcome, InboundMessage message, String key);
}
