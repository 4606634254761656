package dev.idem.cli;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.RuntimeSettings;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code idem run}: starts the configured pipelines and runs until SIGTERM or SIGINT, which stop it
 * gracefully: no new messages, in-flight handlers finish until {@code runtime.shutdown-timeout}, what
 * is left is released and handed back unacknowledged, offsets and acks are flushed. A handler or plugin that calls
 * {@code System.exit} gets the same graceful stop, then exit 1 with a line naming it ({@link ExitGuard}).
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = {"Runs the configured pipelines until stopped.",
                "SIGTERM or SIGINT (Ctrl-C) stop gracefully within runtime.shutdown-timeout."})
final class RunCommand implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(RunCommand.class);

    @Mixin
    IdemCommand.Common common;

    @Override
    public Integer call() throws InterruptedException {
        Setup setup = common.open();
        PrometheusMeterRegistry registry = Metrics.prometheus();
        AtomicReference<OpsServer> bound = new AtomicReference<>();
        OpenTelemetrySdk tracing = Tracing.fromEnvironment(System.getenv());
        IdemRuntime runtime;
        try {
            Idem.Builder builder = setup.builder().meterRegistry(registry);
            if (tracing != null) {
                builder.openTelemetry(tracing);
                log.info("Tracing on: spans exported as the OTEL_* environment says");
            }
            // The port is taken before the store and the broker are contacted: one in use stops the start
            // before any pipeline consumes, instead of after.
            runtime = builder.beforeConnect(config -> {
                RuntimeSettings.Http http = config.runtime().http();
                if (http.enabled()) {
                    bound.set(OpsServer.bind(http.host(), http.port()));
                }
            }).start();
        } catch (RuntimeException e) {
            if (bound.get() != null) {
                bound.get().close();
            }
            if (tracing != null) {
                tracing.close();
            }
            throw e;
        }
        RuntimeSettings settings = runtime.config().runtime();
        OpsServer ops = bound.get() == null ? null : settings.console().enabled()
                ? bound.get().serve(runtime, registry, Console.of(runtime, settings, setup.plugins()))
                : bound.get().serve(runtime, registry);
        CountDownLatch stopped = new CountDownLatch(1);
        ExitGuard.whenExiting(() -> {
            log.info("Stopping: finishing in-flight messages (at most {})", settings.shutdownTimeout());
            boolean drained = runtime.stop(settings.shutdownTimeout());
            if (ops != null) {
                ops.close();
            }
            if (tracing != null) {
                tracing.close(); // Flushes the spans still batched.
            }
            log.info(drained ? "Stopped; every in-flight message finished"
                    : "Stopped; unfinished messages were released and handed back to the broker");
            stopped.countDown();
        }, "idem-shutdown");
        log.info("Idem is running (configuration {}); stop it with SIGTERM or Ctrl-C", setup.home.show(setup.configFile));
        stopped.await();
        return Main.OK;
    }
}
