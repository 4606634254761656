package dev.idem.cli;

import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import java.util.Map;

/**
 * OpenTelemetry for {@code idem run}, from the standard {@code OTEL_*} environment variables: on when they name a
 * traces exporter or an OTLP endpoint ({@code OTEL_TRACES_EXPORTER} other than {@code none},
 * {@code OTEL_EXPORTER_OTLP_ENDPOINT}, {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}), off otherwise, so that an
 * unconfigured process neither exports nor pays for spans. Only traces: metrics stay on {@code /metrics} and
 * logs in {@code logs/}, unless {@code OTEL_METRICS_EXPORTER} or {@code OTEL_LOGS_EXPORTER} say otherwise. The
 * service name defaults to {@code idem}.
 */
final class Tracing {

    private Tracing() {
    }

    /** Whether {@code env} asks for tracing. */
    static boolean requested(Map<String, String> env) {
        String exporter = env.get("OTEL_TRACES_EXPORTER");
        if (exporter != null && !exporter.isBlank()) {
            return !exporter.trim().equalsIgnoreCase("none");
        }
        return notBlank(env.get("OTEL_EXPORTER_OTLP_ENDPOINT")) || notBlank(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    }

    /** The SDK the environment configures, or {@code null} when it asks for no tracing. */
    static OpenTelemetrySdk fromEnvironment(Map<String, String> env) {
        if (!requested(env) || "true".equalsIgnoreCase(env.get("OTEL_SDK_DISABLED"))) {
            return null;
        }
        return AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesSupplier(() -> Map.of(
                        "otel.service.name", "idem",
                        "otel.metrics.exporter", "none",
                        "otel.logs.exporter", "none"))
                .disableShutdownHook()
                .build()
                .getOpenTelemetrySdk();
    }

    private static boolean notBlank(String s) {
        return s != null && !s.isBlank();
    }
}
