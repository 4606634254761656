package dev.idem.cli;

import com.sun.net.httpserver.HttpExchange;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The health and metrics port of {@code idem run} (the JDK's HTTP server, one thread):
 * {@code /health/live} answers 200 while the process runs; {@code /health/ready} 200 when the broker and
 * the store answer and every pipeline consumes, else 503, with each check in the body;
 * {@code /metrics} the Prometheus text format.
 */
final class OpsServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(OpsServer.class);

    private final HttpServer server;
    private final ExecutorService executor;

    private OpsServer(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    static OpsServer start(String host, int port, IdemRuntime runtime, PrometheusMeterRegistry registry) {
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (IOException e) {
            throw new Main.CommandFailed("Cannot serve health and metrics on " + host + ":" + port + " (" + e.getMessage()
                    + "). Pick another runtime.http.port, or set runtime.http.enabled: false");
        }
        server.createContext("/health/live", exchange -> respond(exchange, 200, "text/plain", "UP\n"));
        server.createContext("/health/ready", exchange -> {
            IdemRuntime.Health health = runtime.health();
            StringBuilder body = new StringBuilder(health.ready() ? "READY\n" : "NOT READY\n");
            for (Map.Entry<String, String> check : health.checks().entrySet()) {
                body.append(check.getKey()).append(": ").append(check.getValue()).append('\n');
            }
            respond(exchange, health.ready() ? 200 : 503, "text/plain", body.toString());
        });
        server.createContext("/metrics", exchange ->
                respond(exchange, 200, "text/plain; version=0.0.4", registry.scrape()));
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "idem-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.start();
        log.info("Health and metrics on http://{}:{}/ (/health/live, /health/ready, /metrics)", host,
                server.getAddress().getPort());
        return new OpsServer(server, executor);
    }

    private static void respond(HttpExchange exchange, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type + "; charset=utf-8");
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
