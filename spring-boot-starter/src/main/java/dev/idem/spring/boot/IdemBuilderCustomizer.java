package dev.idem.spring.boot;

import dev.idem.runtime.Idem;

/**
 * Adjusts the {@link Idem.Builder} the starter prepared (configuration, handler beans, meter registry,
 * OpenTelemetry) before it validates and starts: an {@code OutcomeListener}, a broker adapter or store instance
 * of the application's own ({@code builder.broker(id, adapter)}), a ticker in tests. Beans of this type are applied
 * in their {@link org.springframework.core.Ordered} order, once, on the thread that creates the context.
 */
@FunctionalInterface
public interface IdemBuilderCustomizer {

    /**
     * @param builder the builder; do not call {@code start()} or {@code validate()}, the starter does
     */
    void customize(Idem.Builder builder);
}
