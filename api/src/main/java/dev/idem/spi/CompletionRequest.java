package dev.idem.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * One claimed key to complete in a {@link DedupStore#completeAll} batch.
 *
 * @param key the namespaced key
 * @param token the fencing token its claim returned; only the current owner's token completes it
 * @param retention how long the completed key is remembered
 * @param advance the watermark to raise with the completion, or {@code null}; set only for a
 *        {@link SequencedDedupStore}, which applies it exactly as {@link SequencedDedupStore#completeAndAdvance} does
 * @param reply the reply to store with the completion, or {@code null} for none; set only for a {@link ReplyStore},
 *        which stores it exactly as {@link ReplyStore#completeWithReply} does. A store that is not a
 *        {@code ReplyStore} must not be given one (the runtime checks the capability at startup): the SPI's default
 *        {@code completeAll} refuses it, and a store's own may ignore it
 */
public record CompletionRequest(StoreKey key, long token, Duration retention, SequenceAdvance advance,
        StoredReply reply) {

    /**
     * @throws IllegalArgumentException if the reply weighs more than {@link ReplyStore#MAX_REPLY_BYTES}, so that no
     *         batch holding one is ever sent
     */
    public CompletionRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(retention, "retention");
        if (reply != null) {
            ReplyStore.check(reply);
        }
    }

    /** A completion without a reply. */
    public CompletionRequest(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
        this(key, token, retention, advance, null);
    }

    /** A completion without a sequence advance or a reply. */
    public CompletionRequest(StoreKey key, long token, Duration retention) {
        this(key, token, retention, null, null);
    }
}
