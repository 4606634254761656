package dev.idem.cli;

import dev.idem.runtime.IdemRuntime;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.channels.UnresolvedAddressException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.server.handler.QoSHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The health and metrics port of {@code idem run}: {@code /health/live} answers 200 while the process runs;
 * {@code /health/ready} 200 when the broker and the store answer and every pipeline consumes, else 503, with each
 * check in the body; {@code /metrics} the Prometheus text format. Paths match exactly (anything else is 404) and
 * only GET and HEAD are served (else 405 with {@code Allow}). Every answer closes its connection.
 *
 * <p>A probe must be answered whatever other clients do, and the port may be bound to every interface (the
 * container image does). The JDK's {@code HttpServer} cannot promise that: a worker thread blocks on each half-sent
 * request, so a few clients silence the port. Jetty (core, no servlet API) reads every connection on its selector
 * and parses a request as its bytes arrive, so a half-sent request holds a connection, never a thread:
 *
 * <ul>
 *   <li>{@value #THREADS} threads ({@code idem-http-N}): one accepts, one selects, the others serve requests;
 *       {@code /health/live} is a constant, answered on any of them;</li>
 *   <li>{@code /health/ready} and {@code /metrics} call the broker and the store or walk every meter: a
 *       {@link QoSHandler} lets {@value #WORKERS} of them run at once, so they never take every thread; up to
 *       {@value #QUEUED} more wait without a thread, and past that, or after waiting {@link #IDLE_TIMEOUT}, they are
 *       answered 503;</li>
 *   <li>a connection that sends nothing more for {@link #IDLE_TIMEOUT} (while sending its request, or while the
 *       answer cannot be written) is closed; Jetty answers nothing to a request it never got whole. The timeout is
 *       one of idleness, not a deadline: a client that trickles its request is bounded by the next rule;</li>
 *   <li>at most {@value #MAX_CONNECTIONS} connections are open: at the bound Jetty stops accepting, new connections
 *       wait in the listen backlog, and the open ones get an idle timeout of {@link #IDLE_TIMEOUT_WHEN_FULL}, so
 *       connections that send nothing are closed and a waiting probe gets in. (A dedicated acceptor thread makes
 *       the pause real: with the selector accepting, connections past the bound would be accepted and closed);</li>
 *   <li>a request line and headers longer than {@value #MAX_HEAD_BYTES} bytes are answered 431, a malformed
 *       request 400.</li>
 * </ul>
 *
 * <p>Threads are daemons and nothing JVM-wide is set. Thread-safe.
 */
final class OpsServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(OpsServer.class);

    /** How long a connection may send nothing (or take nothing of its answer) before it is closed. */
    static final Duration IDLE_TIMEOUT = Duration.ofSeconds(10);
    /** The most connections open at once; past it, new ones wait to be accepted. */
    static final int MAX_CONNECTIONS = 64;
    /** The idle timeout of the open connections while {@link #MAX_CONNECTIONS} are open. */
    static final Duration IDLE_TIMEOUT_WHEN_FULL = Duration.ofMillis(500);
    /** The longest request line and headers accepted; a longer head is answered 431. */
    static final int MAX_HEAD_BYTES = 8 * 1024;
    /** Jetty's threads: an acceptor, a selector, and those that serve requests. */
    static final int THREADS = 8;
    /** Requests for {@code /health/ready} and {@code /metrics} computed at once. */
    static final int WORKERS = 2;
    /** Requests for {@code /health/ready} and {@code /metrics} that may wait for a worker; more are answered 503. */
    static final int QUEUED = 16;

    private static final String LIVE = "/health/live";
    private static final String READY = "/health/ready";
    private static final String METRICS = "/metrics";
    private static final Set<String> PATHS = Set.of(LIVE, READY, METRICS);

    private final Server server;
    private final ServerConnector connector;
    /** The console served, closed with the port; {@code null} for none. */
    private volatile Console console;

    private OpsServer(Server server, ServerConnector connector) {
        this.server = server;
        this.connector = connector;
    }

    static OpsServer start(String host, int port, Supplier<IdemRuntime.Health> health, Supplier<String> metrics) {
        return bind(host, port).serve(health, metrics);
    }

    /**
     * Takes the port, serving nothing yet: connections wait in the backlog until {@link #serve}. {@code idem run}
     * binds before any pipeline starts, so a port in use stops it before anything is consumed.
     *
     * @throws Main.CommandFailed naming {@code host:port} and why it cannot be bound
     */
    static OpsServer bind(String host, int port) {
        return bind(host, port, IDLE_TIMEOUT, MAX_CONNECTIONS);
    }

    /** As {@link #bind(String, int)}, with the idle timeout and the connection bound given (for tests). */
    static OpsServer bind(String host, int port, Duration idleTimeout, int maxConnections) {
        QueuedThreadPool threads = new QueuedThreadPool(THREADS, 4);
        threads.setName("idem-http");
        threads.setDaemon(true);
        Server server = new Server(threads, new ScheduledExecutorScheduler("idem-http-timer", true), null);

        HttpConfiguration http = new HttpConfiguration();
        http.setRequestHeaderSize(MAX_HEAD_BYTES);
        http.setPersistentConnectionsEnabled(false);
        http.setSendServerVersion(false);
        ServerConnector connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        connector.setHost(host);
        connector.setPort(port);
        connector.setIdleTimeout(idleTimeout.toMillis());
        server.addConnector(connector);

        long whenFull = Math.min(idleTimeout.toMillis(), IDLE_TIMEOUT_WHEN_FULL.toMillis());
        NetworkConnectionLimit limit = new NetworkConnectionLimit(maxConnections, connector);
        limit.setEndPointIdleTimeout(whenFull);
        server.addBean(limit);
        // The limit shortens the idle timeout of the connections open when it is reached; those accepted in the
        // same burst open just after, with the long one, and would keep a probe out for all of it.
        connector.addBean(new Connection.Listener() {
            @Override
            public void onOpened(Connection connection) {
                if (limit.getNetworkConnectionCount() + limit.getPendingNetworkConnectionCount() >= maxConnections) {
                    connection.getEndPoint().setIdleTimeout(whenFull);
                }
            }
        });
        ErrorHandler errors = new ErrorHandler(); // 400, 431, 503 and the like, as plain text without stacks
        errors.setDefaultResponseMimeType("text/plain");
        errors.setShowStacks(false);
        server.setErrorHandler(errors);
        try {
            connector.open();
            return new OpsServer(server, connector);
        } catch (IOException | RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e; // Jetty wraps it: "Failed to bind to ..."
            String why = cause instanceof UnresolvedAddressException ? "the host does not resolve"
                    : cause.getMessage() != null ? cause.getMessage() : cause.toString();
            throw new Main.CommandFailed("Cannot serve health and metrics on " + host + ":" + port + " (" + why
                    + "). Pick another runtime.http.port or runtime.http.host, or set runtime.http.enabled: false");
        }
    }

    /** Starts answering on the bound port. */
    OpsServer serve(IdemRuntime runtime, PrometheusMeterRegistry registry) {
        return serve(runtime::health, registry::scrape, null);
    }

    /** As {@link #serve(IdemRuntime, PrometheusMeterRegistry)}, with the operator's console under /console. */
    OpsServer serve(IdemRuntime runtime, PrometheusMeterRegistry registry, Console console) {
        return serve(runtime::health, registry::scrape, console);
    }

    OpsServer serve(Supplier<IdemRuntime.Health> health, Supplier<String> metrics) {
        return serve(health, metrics, null);
    }

    /** @param console the console under {@value Console#PREFIX}, or {@code null} for none */
    OpsServer serve(Supplier<IdemRuntime.Health> health, Supplier<String> metrics, Console console) {
        QoSHandler workers = new QoSHandler(new Paths(health, metrics, console));
        // The console's API calls the store and walks meters too: it shares the probes' workers, never their threads.
        workers.includePath(READY, METRICS, Console.API + "/*");
        workers.setMaxRequestCount(WORKERS);
        workers.setMaxSuspendedRequestCount(QUEUED);
        workers.setMaxSuspend(Duration.ofMillis(connector.getIdleTimeout()));
        server.setHandler(workers);
        this.console = console;
        if (console != null) {
            console.start();
        }
        try {
            server.start();
        } catch (Exception e) {
            close();
            throw new Main.CommandFailed("Cannot serve health and metrics on " + address() + ": " + e.getMessage());
        }
        log.info("Health and metrics on http://{}/ ({}, {}, {})", address(), LIVE, READY, METRICS);
        if (console != null) {
            log.info("Operator's console on http://{}{}/", address(), Console.PREFIX);
        }
        return this;
    }

    int port() {
        return connector.getLocalPort();
    }

    private String address() {
        return connector.getHost() + ":" + connector.getLocalPort();
    }

    /** Closes the port and every connection; returns once the port is free. */
    @Override
    public void close() {
        try {
            server.stop();
        } catch (Exception e) {
            log.warn("The health and metrics port did not stop cleanly: {}", e.toString());
        }
        connector.close(); // a port bound and never served is released here
        if (console != null) {
            console.close();
        }
    }

    /** Routes the three paths (and the console's, when on); anything else is 404, any method but GET and HEAD 405. */
    private static final class Paths extends Handler.Abstract {
        private final Supplier<IdemRuntime.Health> health;
        private final Supplier<String> metrics;
        private final Console console;

        Paths(Supplier<IdemRuntime.Health> health, Supplier<String> metrics, Console console) {
            this.health = health;
            this.metrics = metrics;
            this.console = console;
        }

        @Override
        public boolean handle(Request request, Response response, Callback callback) {
            String path = Request.getPathInContext(request);
            String method = request.getMethod();
            if (console != null && Console.serves(path)) {
                return console.handle(request, response, callback);
            }
            if (!PATHS.contains(path)) {
                return answer(response, callback, 404, "Not found. Served: " + LIVE + ", " + READY + ", " + METRICS);
            }
            if (!method.equals("GET") && !method.equals("HEAD")) {
                response.getHeaders().put(HttpHeader.ALLOW, "GET, HEAD");
                return answer(response, callback, 405, "Method " + method + " not allowed; use GET or HEAD");
            }
            if (path.equals(LIVE)) {
                return answer(response, callback, 200, "UP");
            }
            try {
                if (path.equals(METRICS)) {
                    response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
                    Content.Sink.write(response, true, metrics.get(), callback);
                    return true;
                }
                IdemRuntime.Health h = health.get();
                StringBuilder body = new StringBuilder(h.ready() ? "READY" : "NOT READY");
                for (Map.Entry<String, String> check : h.checks().entrySet()) {
                    body.append('\n').append(check.getKey()).append(": ").append(check.getValue());
                }
                return answer(response, callback, h.ready() ? 200 : 503, body.toString());
            } catch (RuntimeException e) {
                log.warn("The health and metrics port failed to answer {}", path, e);
                return answer(response, callback, 500, "Internal error: " + e.getClass().getSimpleName());
            }
        }

        /** A plain-text answer: {@code body} and a line break; Jetty adds Content-Length and drops it for HEAD. */
        private static boolean answer(Response response, Callback callback, int status, String body) {
            response.setStatus(status);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; charset=utf-8");
            Content.Sink.write(response, true, body + "\n", callback);
            return true;
        }
    }
}
