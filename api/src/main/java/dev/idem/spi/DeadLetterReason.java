package dev.idem.spi;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Why the runtime dead-letters a message. Adapters copy the original headers onto the dead-lettered
 * copy and add {@link #toHeaders()} plus, where they know it, the origin under the {@code ORIGIN_*}
 * names, so every broker's dead letters read alike.
 *
 * @param cause a stable lowercase code: {@code handler-failed}, {@code non-retryable},
 *        {@code max-deliveries}, {@code missing-id}, {@code invalid-id}, {@code fingerprint-mismatch};
 *        from an adapter, for a body it will not hand to a handler: {@code unsupported-message-type} (a JMS
 *        {@code ObjectMessage} or {@code StreamMessage}, never deserialized), {@code unreadable-message}
 * @param detail a human-readable explanation (the handler's exception message, the rule broken)
 * @param attempts how many times the handler ran for the message
 * @param pipeline the pipeline that dead-lettered it
 * @param traceContext the W3C trace context of the run that dead-lettered it ({@code traceparent}, {@code tracestate}),
 *        so the dead letter continues the message's trace; empty when tracing is off
 */
public record DeadLetterReason(String cause, String detail, int attempts, String pipeline,
        Map<String, String> traceContext) {

    public static final String HEADER_CAUSE = "idem-dead-letter-cause";
    public static final String HEADER_DETAIL = "idem-dead-letter-detail";
    public static final String HEADER_ATTEMPTS = "idem-attempts";
    public static final String HEADER_PIPELINE = "idem-pipeline";
    /** The source (topic or queue) the message was consumed from. */
    public static final String ORIGIN_SOURCE = "idem-origin-source";
    /** The partition, for brokers that have them. */
    public static final String ORIGIN_PARTITION = "idem-origin-partition";
    /** The offset, for brokers that have them. */
    public static final String ORIGIN_OFFSET = "idem-origin-offset";
    /** The broker's message ID of the original. */
    public static final String ORIGIN_MESSAGE_ID = "idem-origin-message-id";

    public DeadLetterReason {
        Objects.requireNonNull(cause, "cause");
        detail = detail == null ? "" : detail;
        Objects.requireNonNull(pipeline, "pipeline");
        traceContext = traceContext == null ? Map.of() : Map.copyOf(traceContext);
    }

    /** A reason without trace context. */
    public DeadLetterReason(String cause, String detail, int attempts, String pipeline) {
        this(cause, detail, attempts, pipeline, Map.of());
    }

    /** The reason as the four {@code HEADER_*} headers, plus the trace context's headers. */
    public Map<String, String> toHeaders() {
        Map<String, String> reason = Map.of(HEADER_CAUSE, cause, HEADER_DETAIL, detail, HEADER_ATTEMPTS,
                Integer.toString(attempts), HEADER_PIPELINE, pipeline);
        if (traceContext.isEmpty()) {
            return reason;
        }
        Map<String, String> all = new HashMap<>(traceContext);
        all.putAll(reason);
        return Map.copyOf(all);
    }
}
