package dev.idem.testkit;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;

/**
 * Finds a server a test suite needs (Redis, PostgreSQL, MariaDB, RabbitMQ): the endpoint named by an
 * environment variable, else the local default; if nothing listens there and a Docker engine is
 * available, the suite's container fallback (Testcontainers); otherwise the suite does not run.
 *
 * <p>A suite that cannot run says so on standard error with what to do. With {@code CI=true} it fails
 * instead, so a CI run never passes by skipping. Thread-safe; call it from a {@code @BeforeAll}.
 */
public final class ExternalService {

    private ExternalService() {
    }

    /**
     * @param name the service, for messages ("PostgreSQL")
     * @param envVariable the variable holding the endpoint URL, e.g. {@code IDEM_TEST_POSTGRES_URL}
     * @param defaultUrl the local default, e.g. {@code jdbc:postgresql://127.0.0.1:5432/test}
     * @param howToStart a hint for a person whose machine lacks the service
     * @param containerFallback starts a container and returns its URL, or {@code null} for none
     * @return the URL of a reachable server
     * @throws org.opentest4j.TestAbortedException when it is unreachable and CI is not set: the suite is skipped
     * @throws AssertionError when it is unreachable and {@code CI=true}
     */
    public static String locate(String name, String envVariable, String defaultUrl, String howToStart,
            Supplier<String> containerFallback) {
        String configured = System.getenv(envVariable);
        String url = configured != null && !configured.isBlank() ? configured : defaultUrl;
        if (reachable(url)) {
            return url;
        }
        if (containerFallback != null && dockerAvailable()) {
            return containerFallback.get();
        }
        String problem = name + " is not reachable at " + url + " (set " + envVariable
                + " to point elsewhere; no Docker engine for a container either). " + howToStart;
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new AssertionError(problem + " CI=true requires every service, so this fails instead of skipping.");
        }
        System.err.println("[idem-testkit] NOT RUN: " + problem);
        Assumptions.abort("NOT RUN: " + problem);
        throw new IllegalStateException("unreachable");
    }

    /** Whether a TCP connection to the URL's host and port opens within a second. */
    public static boolean reachable(String url) {
        HostPort hp = hostPort(url);
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(hp.host, hp.port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Whether a Docker engine looks available for Testcontainers. */
    public static boolean dockerAvailable() {
        String dockerHost = System.getenv("DOCKER_HOST");
        return (dockerHost != null && !dockerHost.isBlank()) || Files.exists(Path.of("/var/run/docker.sock"));
    }

    private record HostPort(String host, int port) {
    }

    private static HostPort hostPort(String url) {
        // jdbc:postgresql://h:p/db and redis://h:p alike: parse what follows the scheme prefixes.
        String rest = url.startsWith("jdbc:") ? url.substring(5) : url;
        URI uri = URI.create(rest);
        String host = uri.getHost() != null ? uri.getHost() : "127.0.0.1";
        int port = uri.getPort();
        if (port < 0) {
            throw new IllegalArgumentException("The URL " + url + " names no port");
        }
        return new HostPort(host, port);
    }
}
