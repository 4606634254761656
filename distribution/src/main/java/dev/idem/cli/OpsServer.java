package dev.idem.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import dev.idem.runtime.IdemRuntime;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
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

    private OpsServer(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    static OpsServer start(String host, int port, IdemRuntime runtime, PrometheusMeterRegistry registry) {
        return start(host, port, runtime::health, registry::scrape);
    }

    static OpsServer start(String host, int port, Supplier<IdemRuntime.Health> health, Supplier<String> metrics) {
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new Main.CommandFailed("Cannot serve health and metrics on " + host + ":" + port + " (" + e.getMessage()
                    + "). Pick another runtime.http.port, or set runtime.http.enabled: false");
        }
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
        AtomicInteger count = new AtomicInteger();
        ExecutorService executor = Executors.newFixedThreadPool(THREADS, r -> {
            Thread t = new Thread(r, "idem-http-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.start();
        log.info("Health and metrics on http://{}:{}/ (/health/live, /health/ready, /metrics)", host,
                server.getAddress().getPort());
        return new OpsServer(server, executor);
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
        server.stop(0);
        executor.shutdownNow();
    }
}
