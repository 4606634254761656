package dev.idem.bench;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.idem.api.TypedHandler;
import dev.idem.bench.PipelineBenchmark.CapturingAdapter;
import dev.idem.bench.PipelineBenchmark.CountingDelivery;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.TypedPayloads;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What typed payloads cost the pipeline, against what decoding itself costs. {@code pipeline} runs
 * {@link PipelineBenchmark}'s pipeline (header ID, one batched claim, completion, ack, metrics; here on the store that
 * remembers nothing, so that the pipeline's own cost is what is measured) on {@value #EVENT_BYTES}-byte JSON events,
 * with a no-op handler of bytes ({@code handler=bytes}, today's pipelines) or a no-op {@code TypedHandler<Event>}
 * ({@code handler=typed}: each event is decoded into a record on the worker, {@code payload.format} left out, which a
 * typed handler reads as {@code json}). In the same run, {@code bareJackson} decodes the same event into the same
 * record in a loop with a plain Jackson {@code ObjectReader} (defaults plus {@code JavaTimeModule}, unknown properties ignored), and
 * {@code runtimeCodec} with the runtime's own settings ({@code TypedPayloads.decode}: strict coercion, duplicate
 * names refused, trailing tokens checked).
 *
 * <p>Read, per {@code concurrency}: the typed pipeline's cost per message minus the bytes pipeline's,
 * {@code 1/typed - 1/bytes}, against {@code 1/bareJackson}: decoding on the workers must cost the pipeline no more
 * than the decoding costs in a loop.
 *
 * <p>Run: {@code mvn -q -pl bench -am package -DskipTests && java -jar bench/target/benchmarks.jar TypedPayloadBenchmark}
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
public class TypedPayloadBenchmark {

    static final int BATCH = PipelineBenchmark.BATCH;
    static final int EVENT_BYTES = 300;

    /** An order event of a typical shape: strings, a decimal, a list of records, an instant. */
    public record Event(String eventId, String type, String orderId, String customerId, BigDecimal amount,
            String currency, List<Line> lines, Instant occurredAt, String channel) {
    }

    public record Line(String sku, int quantity) {
    }

    /** The event every message carries: {@value #EVENT_BYTES} bytes of UTF-8 JSON. */
    static final byte[] PAYLOAD = event();

    private static byte[] event() {
        String json = "{\"eventId\":\"6f1c2a9e-8d47-4b1e-9c33-0a5d7e2b4f18\",\"type\":\"order-paid\","
                + "\"orderId\":\"o-1234567\",\"customerId\":\"c-7654321\",\"amount\":4200.50,\"currency\":\"EUR\","
                + "\"lines\":[{\"sku\":\"SKU-000123\",\"quantity\":2},{\"sku\":\"SKU-000456\",\"quantity\":1}],"
                + "\"occurredAt\":\"2024-05-01T12:34:56.789Z\",\"channel\":\"web\",\"note\":\"";
        String end = "\"}";
        int pad = EVENT_BYTES - json.length() - end.length();
        byte[] bytes = (json + "x".repeat(pad) + end).getBytes(StandardCharsets.UTF_8);
        if (bytes.length != EVENT_BYTES) {
            throw new IllegalStateException("the event is " + bytes.length + " bytes, not " + EVENT_BYTES);
        }
        return bytes;
    }

    /** One pipeline on the baseline store, fed batches by the benchmark thread as an adapter would. */
    @State(Scope.Benchmark)
    public static class Pipeline {

        /** {@code bytes}: a {@code MessageHandler}, nothing decoded. {@code typed}: a {@code TypedHandler<Event>}. */
        @Param({"bytes", "typed"})
        String handler;

        /**
         * {@code 1}: one worker, so that decoding adds to the one thread that runs handlers, completes and acks; the
         * harshest case. {@code 4}: the default {@code concurrency}, where runs decode side by side.
         */
        @Param({"1", "4"})
        int concurrency;

        private IdemRuntime runtime;
        private final CapturingAdapter adapter = new CapturingAdapter();
        private final LongAdder acked = new LongAdder();
        private long nextId;

        @Setup(Level.Trial)
        public void start() {
            String yaml = """
                    broker: { type: bench }
                    store: { type: baseline }
                    pipelines:
                      bench:
                        source: in
                        ordering: none
                        concurrency: %d
                        max-in-flight: %d
                        fingerprint: none
                    """.formatted(concurrency, BATCH * PipelineBenchmark.IN_FLIGHT_BATCHES);
            runtime = Idem.builder()
                    .configYaml(yaml)
                    .env(Map.of())
                    .broker("bench", adapter)
                    .store("baseline", new BaselineStore())
                    .handler("bench", handler.equals("typed")
                            ? TypedHandler.of(Event.class, (event, message, context) -> { })
                            : (message, context) -> { })
                    .meterRegistry(new SimpleMeterRegistry())
                    .start();
        }

        void push() {
            List<Delivery> deliveries = new ArrayList<>(BATCH);
            for (int i = 0; i < BATCH; i++) {
                Map<String, String> headers = Map.of("message-id", "order-" + nextId++);
                deliveries.add(new CountingDelivery(
                        new InboundMessage("in", null, null, headers, PAYLOAD, null, false, 1), acked));
            }
            adapter.listener.onDeliveries(deliveries);
        }

        @TearDown(Level.Trial)
        public void stop() {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    /**
     * A plain Jackson reader of the event, as a handler with its own mapper would hold one; unknown properties (the
     * event's {@code note}) ignored, as the runtime does by default.
     */
    @State(Scope.Thread)
    public static class Bare {
        final ObjectReader reader = new ObjectMapper().registerModule(new JavaTimeModule()).readerFor(Event.class)
                .without(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void pipeline(Pipeline pipeline) {
        pipeline.push();
    }

    @Benchmark
    public Object bareJackson(Bare bare) throws IOException {
        return bare.reader.readValue(PAYLOAD);
    }

    @Benchmark
    public Object runtimeCodec() {
        return TypedPayloads.decode(PAYLOAD, Event.class);
    }
}
