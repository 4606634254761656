package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Spans per delivery on the SDK's in-memory exporter: parents, attributes, outcomes, and the context sent on. */
class TracingTest {

    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String PARENT = "00-" + TRACE_ID + "-00f067aa0ba902b7-01";

    private final PipelineHarness harness = PipelineHarness.realTime();
    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
            .build();
    private IdemRuntime runtime;

    @AfterEach
    void close() {
        if (runtime != null) {
            runtime.stop(Duration.ofSeconds(5));
        }
        harness.close();
        sdk.close();
    }

    private void start(MessageHandler handler) {
        runtime = Idem.builder().configYaml(PipelineHarness.config("")).env(Map.of())
                .broker("memory", harness.broker.connect()).store("caffeine", harness.store)
                .handler("orders", handler).openTelemetry(sdk).start();
    }

    private void publish(String id, Map<String, String> extra) {
        Map<String, String> headers = new HashMap<>(extra);
        headers.put("message-id", id);
        harness.broker.publish(QUEUE, new OutboundMessage(null, null, headers, "x".getBytes(StandardCharsets.UTF_8)));
    }

    private List<SpanData> awaitSpans(int n) {
        await().atMost(Duration.ofSeconds(20)).until(() -> spans.getFinishedSpanItems().size() >= n);
        return spans.getFinishedSpanItems();
    }

    @Test
    void eachDeliveryIsOneConsumerSpanUnderTheTraceItCarries() {
        start((message, context) -> { });
        publish("order-1", Map.of("traceparent", PARENT));
        publish("order-1", Map.of("traceparent", PARENT));

        List<SpanData> done = awaitSpans(2);
        assertThat(done).hasSize(2).allSatisfy(span -> {
            assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
            assertThat(span.getTraceId()).isEqualTo(TRACE_ID);
            assertThat(span.getParentSpanId()).isEqualTo("00f067aa0ba902b7");
            assertThat(span.getName()).isEqualTo("orders process");
            assertThat(span.getAttributes().get(MessageTracing.SYSTEM)).isEqualTo("memory");
            assertThat(span.getAttributes().get(MessageTracing.DESTINATION)).isEqualTo("orders");
            assertThat(span.getAttributes().get(MessageTracing.PIPELINE)).isEqualTo("orders");
            assertThat(span.getAttributes().get(MessageTracing.KEY)).isEqualTo("order-1");
        });
        assertThat(done).extracting(span -> span.getAttributes().get(MessageTracing.OUTCOME))
                .containsExactlyInAnyOrder("processed", "duplicate");
        SpanData processed = done.stream()
                .filter(s -> "processed".equals(s.getAttributes().get(MessageTracing.OUTCOME))).findFirst().orElseThrow();
        assertThat(processed.getAttributes().get(MessageTracing.ATTEMPT)).isEqualTo(1L);
        assertThat(processed.getEvents()).extracting(e -> e.getName()).contains("claimed", "handler.run");
    }

    @Test
    void retriesStayInTheSpanAndADeadLetterCarriesItsContext() {
        AtomicInteger runs = new AtomicInteger();
        start((message, context) -> {
            runs.incrementAndGet();
            throw new IllegalStateException("down");
        });
        publish("pay-1", Map.of("traceparent", PARENT));
        List<InboundMessage> dead = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            dead.addAll(harness.broker.drain(DLQ));
            return !dead.isEmpty();
        });

        SpanData span = awaitSpans(1).get(0);
        assertThat(runs).hasValue(3);
        assertThat(span.getAttributes().get(MessageTracing.ATTEMPT)).isEqualTo(3L);
        assertThat(span.getAttributes().get(MessageTracing.OUTCOME)).isEqualTo("dead-lettered");
        assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(span.getEvents().stream().filter(e -> e.getName().equals("handler.run"))).hasSize(3);
        assertThat(dead.get(0).headers().get("traceparent"))
                .isEqualTo("00-" + TRACE_ID + "-" + span.getSpanId() + "-01");
    }

    @Test
    void emittedMessagesCarryTheRunsContext() {
        start((message, context) -> context.send("payments", "p".getBytes(StandardCharsets.UTF_8), Map.of()));
        publish("order-2", Map.of("traceparent", PARENT));
        await().until(() -> count(runtime, "processed") == 1);
        SpanData span = awaitSpans(1).get(0);
        InboundMessage emitted = harness.broker.drain("payments").get(0);
        assertThat(emitted.headers().get("traceparent")).isEqualTo("00-" + TRACE_ID + "-" + span.getSpanId() + "-01");
    }

    @Test
    void aMessageWithoutTraceContextStartsATrace() {
        start((message, context) -> { });
        publish("order-3", Map.of());
        SpanData span = awaitSpans(1).get(0);
        assertThat(span.getParentSpanContext().isValid()).isFalse();
        assertThat(span.getTraceId()).isNotEqualTo(TRACE_ID);
    }
}
