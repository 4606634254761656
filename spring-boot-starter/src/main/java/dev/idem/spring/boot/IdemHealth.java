package dev.idem.spring.boot;

import dev.idem.runtime.IdemRuntime;
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
 * details; OUT_OF_SERVICE before the runtime started. Each indicator calls the broker and the store, so a request for
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
        return (up ? Health.up() : Health.down())
                .withDetail("broker", broker)
                .withDetail("store", store)
                .withDetail("pipeline", state)
                .build();
    }
}
