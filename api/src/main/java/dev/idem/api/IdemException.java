package dev.idem.api;

/**
 * The root of every exception Idem throws. Unchecked; subclasses say which part failed
 * (configuration, a plugin, the store, the broker).
 */
public class IdemException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public IdemException(String message) {
        super(message);
    }

    public IdemException(String message, Throwable cause) {
        super(message, cause);
    }
}
