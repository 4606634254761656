package dev.idem.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import dev.idem.runtime.IdemRuntime;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The health and metrics port of {@code idem run} (the JDK's HTTP server): {@code /health/live} answers
 * 200 while the process runs; {@code /health/ready} 200 when the broker and the store answer and every
 * pipeline consumes, else 503, with each check in the body; {@code /metrics} the Prometheus text format.
 *
 * <p>Paths match exactly (anything else is 404) and only GET and HEAD are served (else 405). A small pool
 * serves the requests and a request must arrive whole within {@link #REQUEST_TIMEOUT_SECONDS}, so a client
 * that connects and sends half a request cannot stall {@code /health/live} for the others.
 */
final class OpsServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(OpsServer.class);

    static final int THREADS = 4;
    static final int REQUEST_TIMEOUT_SECONDS = 10;

    static {
        // Read once by the JDK's server when its first instance is made: the time a request may take to
        // arrive and its response to be sent, and how long an idle kept-alive connection stays open.
        System.setProperty("sun.net.httpserver.maxReqTime", String.valueOf(REQUEST_TIMEOUT_SECONDS));
        System.setProperty("sun.net.httpserver.maxRspTime", String.valueOf(REQUEST_TIMEOUT_SECONDS));
        System.setProperty("sun.net.httpserver.idleInterval", String.valueOf(REQUEST_TIMEOUT_SECONDS));
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private volatile boolean served;

    private OpsServer(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
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
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException | IllegalArgumentException e) {
            String why = e instanceof UnresolvedAddressException ? "the host does not resolve"
                    : e.getMessage() != null ? e.getMessage() : e.toString();
            throw new Main.CommandFailed("Cannot serve health and metrics on " + host + ":" + port + " (" + why
                    + "). Pick another runtime.http.port or runtime.http.host, or set runtime.http.enabled: false");
        }
        AtomicInteger count = new AtomicInteger();
        ExecutorService executor = Executors.newFixedThreadPool(THREADS, r -> {
            Thread t = new Thread(r, "idem-http-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        return new OpsServer(server, executor);
    }

    /** Starts answering on the bound port. */
    OpsServer serve(IdemRuntime runtime, PrometheusMeterRegistry registry) {
        return serve(runtime::health, registry::scrape);
    }

    OpsServer serve(Supplier<IdemRuntime.Health> health, Supplier<String> metrics) {
        serve(server, "/health/live", exchange -> respond(exchange, 200, "text/plain", "UP\n"));
        serve(server, "/health/ready", exchange -> {
            IdemRuntime.Health h = health.get();
            StringBuilder body = new StringBuilder(h.ready() ? "READY\n" : "NOT READY\n");
            for (Map.Entry<String, String> check : h.checks().entrySet()) {
                body.append(check.getKey()).append(": ").append(check.getValue()).append('\n');
            }
            respond(exchange, h.ready() ? 200 : 503, "text/plain", body.toString());
        });
        serve(server, "/metrics", exchange -> respond(exchange, 200, "text/plain; version=0.0.4", metrics.get()));
        server.start();
        served = true;
        log.info("Health and metrics on http://{}:{}/ (/health/live, /health/ready, /metrics)",
                server.getAddress().getHostString(), server.getAddress().getPort());
        return this;
    }

    /** Serves {@code path} exactly (the JDK matches contexts by prefix) and only for GET and HEAD. */
    private static void serve(HttpServer server, String path, HttpHandler handler) {
        server.createContext(path, exchange -> {
            try {
                String method = exchange.getRequestMethod();
                if (!path.equals(exchange.getRequestURI().getPath())) {
                    respond(exchange, 404, "text/plain", "Not found. Served: /health/live, /health/ready, /metrics\n");
                } else if (!method.equals("GET") && !method.equals("HEAD")) {
                    exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                    respond(exchange, 405, "text/plain", "Method " + method + " not allowed; use GET or HEAD\n");
                } else {
                    handler.handle(exchange);
                }
            } catch (RuntimeException e) {
                log.warn("The health and metrics port failed to answer {} {}", exchange.getRequestMethod(),
                        exchange.getRequestURI().getPath(), e);
                respond(exchange, 500, "text/plain", "Internal error: " + e.getClass().getSimpleName() + "\n");
            } finally {
                exchange.close();
            }
        });
    }

    private static void respond(HttpExchange exchange, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type + "; charset=utf-8");
        if (exchange.getRequestMethod().equals("HEAD")) {
            exchange.sendResponseHeaders(status, -1);
            return;
        }
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        if (!served) {
            // The JDK's server releases its port from its dispatcher thread (a channel registered with a selector
            // is closed by the selector's next select), so a server bound and never started must start to stop.
            server.start();
        }
        server.stop(0);
        executor.shutdownNow();
    }
}
