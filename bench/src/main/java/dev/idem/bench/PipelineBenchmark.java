package dev.idem.bench;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
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
 * The whole pipeline per message: ID extraction from a header, SHA-256 fingerprint, one batched
 * claim in the Caffeine store, a no-op handler on the pipeline's worker threads, completion, ack,
 * metrics. The benchmark thread plays the broker adapter: it builds batches of {@value #BATCH} messages
 * with fresh IDs (as an adapter decodes them) and hands them over; the pipeline's in-flight limit
 * ({@value #IN_FLIGHT_BATCHES} batches) blocks it while the workers catch up, so in the steady state
 * the score is the rate at which messages are settled.
 *
 * <p>{@code concurrency} is the number of pipeline worker threads (1 or 2); {@code duplicatePercent}
 * is the share of messages whose ID repeats an earlier one (they are acked as duplicates without
 * running the handler); {@code fingerprint} toggles the payload digest.
 *
 * <p>Run: {@code mvn -q -pl bench -am package -DskipTests && java -jar bench/target/benchmarks.jar PipelineBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
public class PipelineBenchmark {

    static final int BATCH = 1000;
    static final int IN_FLIGHT_BATCHES = 4;

    @Param({"1", "2"})
    int concurrency;

    @Param({"0", "10", "50"})
    int duplicatePercent;

    @Param({"sha256", "none"})
    String fingerprint;

    /** The Caffeine store's maximum-size: how many completed keys it remembers before evicting. */
    @Param({"1000000"})
    long storeSize;

    /**
     * {@code caffeine}: the real store. {@code baseline}: a store that acquires every key and remembers
     * nothing, to show what the pipeline alone costs (no duplicate is ever found with it).
     */
    @Param({"caffeine"})
    String store;

    /** {@code commit.batch-size}: 100 (the default) batches completions through the committers; 1 completes each on its worker. */
    @Param({"100", "1"})
    int commitBatchSize;

    /**
     * {@code off}: no OpenTelemetry given, as {@code idem run} without {@code OTEL_*}. {@code on}: an SDK that
     * samples every delivery into a span and exports nowhere, the cost of the spans themselves.
     */
    @Param({"off"})
    String tracing;

    private IdemRuntime runtime;
    private final CapturingAdapter adapter = new CapturingAdapter();
    private final SplittableRandom random = new SplittableRandom(7);
    private final byte[] payload = "{\"orderId\":\"o-123\",\"amount\":4200,\"currency\":\"EUR\"}"
            .getBytes(StandardCharsets.UTF_8);
    private long nextId;
    private final LongAdder acked = new LongAdder();

    @Setup(Level.Trial)
    public void start() {
        String yaml = """
                broker: { type: bench }
                store:
                  type: caffeine
                  caffeine: { maximum-size: %d }
                pipelines:
                  bench:
                    source: in
                    ordering: none
                    concurrency: %d
                    max-in-flight: %d
                    fingerprint: %s
                    commit: { batch-size: %d }
                """.formatted(storeSize, concurrency, BATCH * IN_FLIGHT_BATCHES, fingerprint, commitBatchSize);
        Idem.Builder builder = Idem.builder();
        if (store.equals("baseline")) {
            yaml = yaml.replace("type: caffeine", "type: baseline").replaceAll("  caffeine: .*\n", "");
            builder.store("baseline", new BaselineStore());
        }
        if (tracing.equals("on")) {
            builder.openTelemetry(OpenTelemetrySdk.builder()
                    .setTracerProvider(SdkTracerProvider.builder().build()).build());
        }
        runtime = builder
                .configYaml(yaml)
                .env(Map.of())
                .broker("bench", adapter)
                .handler("bench", (message, context) -> { })
                .meterRegistry(new SimpleMeterRegistry())
                .start();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void pipeline() {
        List<Delivery> deliveries = new ArrayList<>(BATCH);
        for (int i = 0; i < BATCH; i++) {
            // A duplicate repeats one of the last 10,000 IDs, as a producer retry or redelivery would.
            long id = nextId > 0 && random.nextInt(100) < duplicatePercent
                    ? nextId - 1 - random.nextInt((int) Math.min(nextId, 10_000)) : nextId++;
            Map<String, String> headers = Map.of("message-id", "order-" + id);
            deliveries.add(new CountingDelivery(
                    new InboundMessage("in", null, null, headers, payload, null, false, 1), acked));
        }
        adapter.listener.onDeliveries(deliveries);
    }

    @TearDown(Level.Trial)
    public void stop() {
        runtime.stop(Duration.ofSeconds(10));
    }

    /** Plays the broker: keeps the pipeline's listener so the benchmark can push batches into it. */
    static final class CapturingAdapter implements BrokerAdapter {
        volatile DeliveryListener listener;

        @Override
        public Subscription subscribe(SubscriptionRequest request, DeliveryListener l) {
            this.listener = l;
            return new Subscription() {
                @Override
                public void stop() {
                }

                @Override
                public void close() {
                }
            };
        }

        @Override
        public void publish(String destination, OutboundMessage message) {
            throw new UnsupportedOperationException("the benchmark adapter only consumes");
        }

        @Override
        public void close() {
        }
    }

    static final class CountingDelivery implements Delivery {
        private final InboundMessage message;
        private final LongAdder settled;

        CountingDelivery(InboundMessage message, LongAdder settled) {
            this.message = message;
            this.settled = settled;
        }

        @Override
        public InboundMessage message() {
            return message;
        }

        @Override
        public void ack() {
            settled.increment();
        }

        @Override
        public void retryLater(Duration delay) {
            throw new IllegalStateException("the benchmark expects no deferral: " + message.headers());
        }

        @Override
        public void deadLetter(DeadLetterReason reason) {
            throw new IllegalStateException("the benchmark expects no dead letter: " + reason);
        }
    }
}
