package dev.idem.api;

/**
 * Thrown when an optimistic update found the row changed since it was read (its version moved), as
 * {@code dev.idem.api.guard.OptimisticUpdate} does. The runtime runs the handler again at once, without
 * back-off, so that it reads the row afresh, up to the pipeline's {@code retry.conflict-attempts}; past
 * that it is an ordinary failure (retried with back-off, then dead-lettered). In transactional mode each
 * run is a new transaction.
 */
public class ConcurrentUpdateException extends IdemException {

    private static final long serialVersionUID = 1L;

    public ConcurrentUpdateException(String message) {
        super(message);
    }
}
