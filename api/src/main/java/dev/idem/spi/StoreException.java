package dev.idem.spi;

import dev.idem.api.IdemException;

/**
 * A dedup store operation failed. A {@linkplain #retriable() retriable} failure (the server
 * is unreachable or timed out) makes the pipeline back off and try again without acking
 * anything; any other failure is reported and the affected messages are left unacked.
 */
public class StoreException extends IdemException {

    private static final long serialVersionUID = 1L;

    private final boolean retriable;

    public StoreException(String message, boolean retriable, Throwable cause) {
        super(message, cause);
        this.retriable = retriable;
    }

    public StoreException(String message, boolean retriable) {
        this(message, retriable, null);
    }

    /** Whether the same call may succeed later (connection lost, timeout, failover). */
    public boolean retriable() {
        return retriable;
    }
}
