package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.IdemRuntime;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The gauges that tell "slow" from "stuck": unsettled deliveries, the oldest one's age, and the broker's backlog. */
class OperationsMetricsTest {

    private final PipelineHarness harness = new PipelineHarness();
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void close() {
        release.countDown();
        harness.close();
    }

    private static double gauge(MeterRegistry registry, String name, String... tags) {
        Gauge g = registry.find(name).tags(tags).gauge();
        return g == null ? Double.NaN : g.value();
    }

    @Test
    void aStuckHandlerShowsInTheInFlightAgeAndTheBacklogGrows() {
        IdemRuntime runtime = harness.start(PipelineHarness.config("concurrency: 1\nmax-in-flight: 2\nhandler-timeout: 1h\n"),
                (message, context) -> release.await(1, TimeUnit.MINUTES));
        for (int i = 0; i < 10; i++) {
            harness.publish("m-" + i, "x");
        }
        MeterRegistry meters = runtime.meterRegistry();
        await().until(() -> gauge(meters, PipelineMetrics.IN_FLIGHT, "pipeline", "orders") == 2);
        harness.ticker.advance(Duration.ofSeconds(42));
        assertThat(gauge(meters, PipelineMetrics.OLDEST_IN_FLIGHT, "pipeline", "orders")).isGreaterThanOrEqualTo(42);
        // The backlog is read every 5 s of real time.
        await().atMost(Duration.ofSeconds(20)).until(() ->
                gauge(meters, PipelineMetrics.BACKLOG, "pipeline", "orders", "partition", QUEUE) == 8);

        release.countDown();
        harness.awaitSettled();
        await().until(() -> gauge(meters, PipelineMetrics.IN_FLIGHT, "pipeline", "orders") == 0);
        assertThat(gauge(meters, PipelineMetrics.OLDEST_IN_FLIGHT, "pipeline", "orders")).isZero();
    }
}
