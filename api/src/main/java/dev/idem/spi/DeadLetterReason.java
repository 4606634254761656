package dev.idem.spi;

import java.util.Objects;

/**
 * Why the runtime dead-letters a message; adapters attach it to the dead-lettered copy
 * (as headers {@code idem-dead-letter-cause}, {@code idem-dead-letter-detail},
 * {@code idem-attempts}, {@code idem-pipeline}) where the broker allows.
 *
 * @param cause a stable lowercase code: {@code handler-failed}, {@code non-retryable},
 *        {@code max-deliveries}, {@code missing-id}, {@code invalid-id}, {@code fingerprint-mismatch}
 * @param detail a human-readable explanation (the handler's exception message, the rule broken)
 * @param attempts how many times the handler ran for the message
 * @param pipeline the pipeline that dead-lettered it
 */
public record DeadLetterReason(String cause, String detail, int attempts, String pipeline) {

    public DeadLetterReason {
        Objects.requireNonNull(cause, "cause");
        detail = detail == null ? "" : detail;
        Objects.requireNonNull(pipeline, "pipeline");
    }
}
