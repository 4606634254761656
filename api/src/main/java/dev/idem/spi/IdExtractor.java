package dev.idem.spi;

/**
 * Finds a message's idempotency key: in a header, the broker's message ID, a field of the payload.
 * Pipelines chain several; the first that finds a key wins.
 *
 * <p>Thread-safe; called on the pipeline's hot path for every message, so it should not allocate
 * more than the key itself.
 */
@FunctionalInterface
public interface IdExtractor {

    /**
     * @return the key, or {@code null} when this message does not carry one where this extractor looks
     * @throws IllegalArgumentException when the place exists but cannot be read (a payload that is
     *         not valid JSON); the runtime treats the message as having an invalid key
     */
    String extract(InboundMessage message);
}
