package dev.idem.runtime.config;

import java.time.Duration;

/**
 * Process-wide settings ({@code runtime}).
 *
 * @param shutdownTimeout how long a graceful stop waits for in-flight handler runs before it
 *        interrupts them and releases their keys
 * @param summaryInterval how often each pipeline logs a summary line; zero for never
 * @param handlerCreateTimeout how long creating a handler from its class may take
 * @param http the health and metrics port, as {@code idem run} serves it
 */
public record RuntimeSettings(Duration shutdownTimeout, Duration summaryInterval, Duration handlerCreateTimeout,
        Http http) {

    /**
     * @param enabled whether the port is served
     * @param host the bind address
     * @param port the port; 0 for any free one
     */
    public record Http(boolean enabled, String host, int port) {
    }
}
