package dev.idem.api;

/**
 * Thrown by a handler to say that retrying cannot help (a malformed payload, a rule the
 * message breaks): the runtime skips the remaining in-process retries and dead-letters
 * the message at once.
 */
public class NonRetryableException extends IdemException {

    private static final long serialVersionUID = 1L;

    public NonRetryableException(String message) {
        super(message);
    }

    public NonRetryableException(String message, Throwable cause) {
        super(message, cause);
    }
}
