package dev.idem.runtime.config;

import java.time.Duration;

/**
 * Process-wide settings ({@code runtime}).
 *
 * @param shutdownTimeout how long a graceful stop waits for in-flight handler runs before it
 *        interrupts them and releases their keys
 */
public record RuntimeSettings(Duration shutdownTimeout) {
}
