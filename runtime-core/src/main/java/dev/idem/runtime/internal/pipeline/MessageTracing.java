package dev.idem.runtime.internal.pipeline;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.HashMap;
import java.util.Map;

/**
 * One OpenTelemetry span per delivery a pipeline takes in, from receipt to settlement (receive, claim,
 * handle, complete, ack), a child of the W3C {@code traceparent} the message carries. Retries, deferrals and
 * set-asides stay in the same span; the handler's runs, its durable steps, the claim and the ack are its events.
 * Attributes follow the messaging semantic conventions ({@code messaging.system}, {@code messaging.destination.name},
 * {@code messaging.operation.type}, {@code messaging.message.id}) plus {@code idem.pipeline}, {@code idem.key},
 * {@code idem.outcome} and {@code idem.attempt}. Dead letters and emitted messages carry the span's context.
 *
 * <p>{@link #OFF} does nothing and allocates nothing: tracing costs a field read per step unless an
 * {@link OpenTelemetry} was given. Thread-safe.
 */
final class MessageTracing {

    static final MessageTracing OFF = new MessageTracing(null, null, null);

    static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> OPERATION = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<String> PARTITION = AttributeKey.stringKey("messaging.destination.partition.id");
    static final AttributeKey<String> PIPELINE = AttributeKey.stringKey("idem.pipeline");
    static final AttributeKey<String> KEY = AttributeKey.stringKey("idem.key");
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idem.outcome");
    static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("idem.attempt");
    static final AttributeKey<String> STEP_NAME = AttributeKey.stringKey("idem.step.name");
    static final AttributeKey<String> STEP_OUTCOME = AttributeKey.stringKey("idem.step.outcome");

    private static final TextMapGetter<Map<String, String>> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final Tracer tracer;
    private final String system;
    private final String pipeline;

    private MessageTracing(Tracer tracer, String system, String pipeline) {
        this.tracer = tracer;
        this.system = system;
        this.pipeline = pipeline;
    }

    /** Spans for {@code pipeline} on {@code openTelemetry}; {@link #OFF} when it is {@code null}. */
    static MessageTracing of(OpenTelemetry openTelemetry, String brokerType, String pipeline) {
        if (openTelemetry == null) {
            return OFF;
        }
        return new MessageTracing(openTelemetry.getTracer("dev.idem.runtime"), brokerType, pipeline);
    }

    boolean enabled() {
        return tracer != null;
    }

    /** Starts the delivery's span, a child of the context its headers carry. */
    void received(Work w) {
        if (tracer == null) {
            return;
        }
        Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(), w.message.headers(), HEADERS);
        var builder = tracer.spanBuilder(w.message.source() + " process")
                .setSpanKind(SpanKind.CONSUMER)
                .setParent(parent)
                .setAttribute(SYSTEM, system)
                .setAttribute(DESTINATION, w.message.source())
                .setAttribute(OPERATION, "process")
                .setAttribute(PIPELINE, pipeline);
        if (w.message.brokerMessageId() != null) {
            builder.setAttribute(MESSAGE_ID, w.message.brokerMessageId());
        }
        if (w.message.partition() != null) {
            builder.setAttribute(PARTITION, w.message.partition());
        }
        w.span = builder.startSpan();
    }

    /** Adds a step of the delivery's way (claimed, handler started or ended, acked) to its span. */
    void event(Work w, String name) {
        if (tracer == null) {
            return;
        }
        Span span = w.span;
        if (span != null) {
            span.addEvent(name);
        }
    }

    /** A handler run starts: its attempt number becomes the span's. */
    void run(Work w, int attempt) {
        if (tracer == null) {
            return;
        }
        Span span = w.span;
        if (span != null) {
            span.setAttribute(ATTEMPT, (long) attempt);
            span.addEvent("handler.run");
        }
    }

    /**
     * A durable step of the run: event {@code idem.step} with the step's name and outcome ({@code recorded}: its action
     * ran and its result was recorded; {@code replayed}: its recorded result was returned; {@code unrecorded}: its
     * action ran in a run without a claim).
     */
    void step(Work w, String name, String outcome) {
        if (tracer == null) {
            return;
        }
        Span span = w.span;
        if (span != null) {
            span.addEvent("idem.step", Attributes.of(STEP_NAME, name, STEP_OUTCOME, outcome));
        }
    }

    /** Ends the delivery's span with its outcome; dead letters and failures mark it an error. */
    void settled(Work w, String outcome) {
        if (tracer == null) {
            return;
        }
        Span span = w.span;
        if (span == null) {
            return;
        }
        w.span = null;
        if (w.key != null) {
            span.setAttribute(KEY, w.key);
        }
        span.setAttribute(OUTCOME, outcome);
        if (outcome.equals("dead-lettered") || outcome.equals("failed") || outcome.equals("commit-failed")) {
            span.setStatus(StatusCode.ERROR, outcome);
        }
        span.end();
    }

    /** The W3C headers of the delivery's span, for what it sends on (dead letters, emitted messages); may be empty. */
    Map<String, String> context(Work w) {
        if (tracer == null) {
            return Map.of();
        }
        Span span = w.span;
        if (span == null) {
            return Map.of();
        }
        Map<String, String> headers = new HashMap<>(4);
        W3CTraceContextPropagator.getInstance().inject(Context.root().with(span), headers, Map::put);
        return headers;
    }
}
