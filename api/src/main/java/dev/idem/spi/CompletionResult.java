package dev.idem.spi;

import java.util.Objects;

/**
 * What a store answers for one {@link CompletionRequest} of a {@link DedupStore#completeAll} batch: the
 * key is {@link Completed} (as {@link DedupStore#complete} answering {@code true}), the token is
 * {@link NotOwner not the owner's} ({@code false}: nothing changed), or this key's write {@link Failed}
 * while others of the batch may have landed. The runtime acks a message only on {@link Completed}.
 */
public sealed interface CompletionResult {

    /** The answer for a key that is now completed, or was already completed with this token. */
    CompletionResult COMPLETED = new Completed();

    /** The answer for a token that is not the current owner's. */
    CompletionResult NOT_OWNER = new NotOwner();

    /** The key is completed with the request's token. */
    record Completed() implements CompletionResult {
    }

    /** The token is not the current owner's (the lease ran out and the key was taken over, or it was released). */
    record NotOwner() implements CompletionResult {
    }

    /**
     * This key's completion may not have landed.
     *
     * @param cause why; {@link StoreException#retriable()} says whether asking again may help
     */
    record Failed(StoreException cause) implements CompletionResult {
        public Failed {
            Objects.requireNonNull(cause, "cause");
        }
    }
}
