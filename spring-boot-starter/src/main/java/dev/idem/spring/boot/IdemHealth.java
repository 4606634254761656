package dev.idem.spring.boot;

import dev.idem.runtime.IdemRuntime;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.actuate.health.CompositeHealthContributor;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * Actuator health: the {@code idem} contributor holds one indicator per pipeline, from {@link IdemRuntime#health()},
 * the check behind {@code idem run}'s {@code /health/ready}. A pipeline is UP when the broker and the store answer
 * their health checks and it consumes; DOWN otherwise (also once the runtime stopped), with each check's answer as
 * details; OUT_OF_SERVICE before the runtime started. The details also hold the pipeline's unsettled deliveries
 * ({@code inFlight}, the {@code idem.inflight} gauge) and, where the adapter reports one, its {@code backlog} (the
 * {@code idem.backlog} gauges added up: Kafka lag, ready messages of a queue); they inform, the status ignores them. Each indicator calls the broker and the store, so a request for
 * {@code idem} probes them once per pipeline. Put it in the readiness group
 * ({@code management.endpoint.health.group.readiness.include=readinessState,idem}), not in liveness: a broker outage
 * is not cured by restarting the application.
 */
final class IdemHealth {

    private IdemHealth() {
    }

    static CompositeHealthContributor contributor(IdemLifecycle lifecycle) {
        Map<String, HealthIndicator> pipelines = new LinkedHashMap<>();
        for (String pipeline : lifecycle.config().pipelines().keySet()) {
            pipelines.put(pipeline, () -> health(lifecycle.runtime(), pipeline));
        }
        return CompositeHealthContributor.fromMap(pipelines);
    }

    static Health health(Optional<IdemRuntime> runtime, String pipeline) {
        if (runtime.isEmpty()) {
            return Health.outOfService().withDetail("pipeline", "not started").build();
        }
        Map<String, String> checks = runtime.get().health().checks();
        String broker = checks.get("broker");
        String store = checks.get("store");
        String state = checks.getOrDefault("pipeline." + pipeline, "unknown");
        boolean up = "up".equals(broker) && "up".equals(store) && "running".equals(state);
        Health.Builder health = (up ? Health.up() : Health.down())
                .withDetail("broker", broker)
                .withDetail("store", store)
                .withDetail("pipeline", state);
        MeterRegistry meters = runtime.get().meterRegistry();
        sum(meters, "idem.inflight", pipeline).ifPresent(n -> health.withDetail("inFlight", n));
        sum(meters, "idem.backlog", pipeline).ifPresent(n -> health.withDetail("backlog", n));
        return health.build();
    }

    /**
     * The pipeline's gauges of that name added up (the backlog has one per partition or queue), as the runtime's
     * meters have them: empty when there is none, or none with a value yet.
     */
    private static Optional<Long> sum(MeterRegistry meters, String name, String pipeline) {
        double total = 0;
        boolean any = false;
        for (Gauge gauge : meters.find(name).tag("pipeline", pipeline).gauges()) {
            double value = gauge.value();
            if (Double.isFinite(value)) {
                total += value;
                any = true;
            }
        }
        return any ? Optional.of(Math.round(total)) : Optional.empty();
    }
}
