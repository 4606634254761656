package dev.idem.spi;

import dev.idem.api.IdemException;

/**
 * A broker operation failed: connecting, consuming, publishing, acking or dead-lettering.
 * A {@linkplain #retriable() retriable} failure may succeed later.
 */
public class BrokerException extends IdemException {

    private static final long serialVersionUID = 1L;

    private final boolean retriable;

    public BrokerException(String message, boolean retriable, Throwable cause) {
        super(message, cause);
        this.retriable = retriable;
    }

    public BrokerException(String message, boolean retriable) {
        this(message, retriable, null);
    }

    public boolean retriable() {
        return retriable;
    }
}
