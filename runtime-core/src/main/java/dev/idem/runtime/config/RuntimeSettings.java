package dev.idem.runtime.config;

import dev.idem.spi.Secret;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * Process-wide settings ({@code runtime}).
 *
 * @param shutdownTimeout how long a graceful stop waits for in-flight handler runs before it
 *        interrupts them and releases their keys
 * @param summaryInterval how often each pipeline logs a summary line; zero for never
 * @param handlerCreateTimeout how long creating a handler from its class may take
 * @param http the health and metrics port, as {@code idem run} serves it
 * @param console the operator's console on that port
 */
public record RuntimeSettings(Duration shutdownTimeout, Duration summaryInterval, Duration handlerCreateTimeout,
        Http http, Console console) {

    /**
     * @param enabled whether the port is served
     * @param host the bind address
     * @param port the port; 0 for any free one
     */
    public record Http(boolean enabled, String host, int port) {

        /** Whether the host names this machine's loopback interface only; resolving a name may ask DNS. */
        public boolean loopback() {
            return isLoopback(host);
        }

        /** Whether {@code host} resolves to a loopback address; a host that does not resolve is not one. */
        static boolean isLoopback(String host) {
            try {
                return InetAddress.getByName(host).isLoopbackAddress();
            } catch (UnknownHostException | SecurityException e) {
                return false;
            }
        }
    }

    /**
     * @param enabled whether {@code idem run} serves the console under {@code /console} on the ops port
     * @param token what a request must show ({@code Authorization: Bearer}, or the login form); {@code null} when
     *        none is configured: then the console only shows, and only on a loopback host
     * @param showPayloads whether the dead-letter view may send whole payloads to the browser (off: their first bytes)
     */
    public record Console(boolean enabled, Secret token, boolean showPayloads) {

        /** A console that shows the first bytes of payloads only. */
        public Console(boolean enabled, Secret token) {
            this(enabled, token, false);
        }
    }
}
