package dev.idem.runtime.internal.pipeline;

import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * One in-memory broker, one Caffeine store on a manual ticker, and runtimes started on them:
 * the whole pipeline with real plugins, no mocks, and time under the test's control. The runtimes'
 * own timers (retry back-off, deferral, lease renewal, handler timeouts) run on the same ticker,
 * unless the harness was made for {@linkplain #realTime() real time}.
 */
final class PipelineHarness implements AutoCloseable {

    static final String QUEUE = "orders";
    static final String DLQ = "orders.DLQ";

    final ManualTicker ticker = new ManualTicker();
    final InMemoryBroker broker = new InMemoryBroker(ticker, 50);
    final DedupStore store = new CaffeineDedupStoreProvider().create(
            TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
            new StoreContext(ticker));
    private final List<IdemRuntime> runtimes = new ArrayList<>();
    private final LongSupplier runtimeTicker;

    PipelineHarness() {
        this.runtimeTicker = ticker;
    }

    private PipelineHarness(LongSupplier runtimeTicker) {
        this.runtimeTicker = runtimeTicker;
    }

    /** A harness whose runtimes keep real time (the broker and the store keep the manual ticker). */
    static PipelineHarness realTime() {
        return new PipelineHarness(System::nanoTime);
    }

    /** The pipeline settings every test starts from; {@code extra} lines are appended under the pipeline. */
    static String config(String extra) {
        return pipeline("""
                retry:
                  max-attempts: 3
                  initial-backoff: 0ms
                  max-backoff: 0ms
                """ + extra);
    }

    /** The memory broker, the Caffeine store and pipeline {@code orders} with only {@code settings} under it. */
    static String pipeline(String settings) {
        return """
                broker:
                  type: memory
                store:
                  type: caffeine
                runtime:
                  shutdown-timeout: 10s
                pipelines:
                  orders:
                    source: orders
                    dead-letter: orders.DLQ
                """ + settings.lines().map(l -> "    " + l + "\n").reduce("", String::concat);
    }

    IdemRuntime start(String yaml, MessageHandler handler) {
        return start(yaml, handler, store, new SimpleMeterRegistry());
    }

    IdemRuntime start(String yaml, MessageHandler handler, DedupStore storeToUse, MeterRegistry meters) {
        return start(yaml, handler, broker.connect(), storeToUse, meters);
    }

    /** A runtime on {@code connection} (one of {@link #broker}'s, possibly wrapped) and {@code storeToUse}. */
    IdemRuntime start(String yaml, MessageHandler handler, BrokerAdapter connection, DedupStore storeToUse,
            MeterRegistry meters) {
        IdemRuntime runtime = Idem.builder()
                .configYaml(yaml)
                .env(Map.of())
                .broker("memory", connection)
                .store("caffeine", storeToUse)
                .handler("orders", handler)
                .meterRegistry(meters)
                .ticker(runtimeTicker)
                .start();
        runtimes.add(runtime);
        return runtime;
    }

    void publish(String id, String payload) {
        publish(id, null, payload);
    }

    void publish(String id, String key, String payload) {
        broker.publish(QUEUE, new OutboundMessage(null, key, id == null ? Map.of() : Map.of("message-id", id),
                payload.getBytes(StandardCharsets.UTF_8)));
    }

    /** Waits until the queue is empty and nothing is held unsettled. */
    void awaitSettled() {
        await().atMost(Duration.ofSeconds(30)).until(() -> broker.depth(QUEUE) == 0 && broker.unsettled(QUEUE) == 0);
    }

    static double count(IdemRuntime runtime, String outcome) {
        return runtime.meterRegistry().find(Outcomes.MESSAGES).tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    @Override
    public void close() {
        for (IdemRuntime r : runtimes) {
            r.stop(Duration.ofSeconds(5));
        }
        broker.close();
        store.close();
    }
}
