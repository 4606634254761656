package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.IdemRuntime;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The health and metrics port on its own: exact paths, GET and HEAD only, and no client can stall it. */
class OpsServerTest {

    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private OpsServer server;

    @BeforeEach
    void start() {
        server = OpsServer.start("127.0.0.1", 0, () -> new IdemRuntime.Health(true, Map.of("store", "UP")),
                () -> "idem_messages_total 1\n");
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<String> send(String method, String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(5)).build();
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void servesItsThreePathsExactly() throws Exception {
        assertThat(send("GET", "/health/live").statusCode()).isEqualTo(200);
        assertThat(send("GET", "/health/ready").body()).isEqualTo("READY\nstore: UP\n");
        assertThat(send("GET", "/metrics").body()).contains("idem_messages_total 1");
        assertThat(send("GET", "/metricsfoo").statusCode()).isEqualTo(404);
        assertThat(send("GET", "/health/live/../x").statusCode()).isEqualTo(404);
        assertThat(send("GET", "/health/livex").statusCode()).isEqualTo(404);
    }

    @Test
    void answersHeadWithoutABodyAndRefusesOtherMethods() throws Exception {
        HttpResponse<String> head = send("HEAD", "/health/live");
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();
        HttpResponse<String> post = send("POST", "/metrics");
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("Allow")).hasValue("GET, HEAD");
        assertThat(send("DELETE", "/health/ready").statusCode()).isEqualTo(405);
    }

    @Test
    void aClientThatSendsHalfARequestDoesNotStallTheOthers() throws Exception {
        try (Socket stalled = new Socket("127.0.0.1", server.port())) {
            OutputStream out = stalled.getOutputStream();
            out.write("GE".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            for (int i = 0; i < 3; i++) {
                assertThat(send("GET", "/health/live").statusCode()).isEqualTo(200);
            }
        }
    }

    /** Issue 24, item 2: four clients that sent half a request silenced /health/live for 30 s. */
    @Test
    void probesAreAnsweredAtOnceWhileManyClientsHoldHalfSentRequests() throws Exception {
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < 16; i++) {
                Socket s = new Socket("127.0.0.1", server.port());
                s.getOutputStream().write("GET /health/live HTTP/1.1\r\nHost: x\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                stalled.add(s);
            }
            for (int i = 0; i < 5; i++) {
                assertThat(probe(server.port())).isEqualTo("HTTP/1.1 200 OK");
            }
            assertThat(send("GET", "/health/ready").statusCode()).isEqualTo(200);
        } finally {
            for (Socket s : stalled) {
                s.close();
            }
        }
    }

    /**
     * Jetty closes a connection whose request stops arriving without answering it (the old server sent a 408 first):
     * either way the client holds nothing past the idle timeout, and nothing is written to a client that stalls.
     */
    @Test
    void aRequestThatStopsArrivingIsClosedAfterTheIdleTimeout() throws Exception {
        server.close();
        server = OpsServer.bind("127.0.0.1", 0, Duration.ofMillis(200), OpsServer.MAX_CONNECTIONS)
                .serve(() -> new IdemRuntime.Health(true, Map.of()), () -> "");
        try (Socket stalled = new Socket("127.0.0.1", server.port())) {
            stalled.setSoTimeout(5_000);
            long start = System.nanoTime();
            stalled.getOutputStream().write("GET /health/li".getBytes(StandardCharsets.US_ASCII));
            assertThat(stalled.getInputStream().readAllBytes()).as("closed, nothing answered").isEmpty();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(150),
                    Duration.ofSeconds(3));
        }
        assertThat(probe(server.port())).isEqualTo("HTTP/1.1 200 OK");
    }

    /**
     * At the bound Jetty stops accepting rather than closing the oldest connection as the old server did: the probe
     * waits in the listen backlog, behind 8 idle connections, while the idle ones, given a short idle timeout at the
     * bound, are closed, about a second for each bound's worth ahead of it.
     */
    @Test
    void connectionsPastTheBoundWaitWhileIdleOnesAreClosedSoAProbeGetsIn() throws Exception {
        server.close();
        server = OpsServer.bind("127.0.0.1", 0, Duration.ofSeconds(30), OpsServer.MAX_CONNECTIONS)
                .serve(() -> new IdemRuntime.Health(true, Map.of()), () -> "");
        List<Socket> idle = new ArrayList<>();
        try {
            for (int i = 0; i < OpsServer.MAX_CONNECTIONS + 8; i++) {
                Socket s = new Socket("127.0.0.1", server.port());
                s.setSoTimeout(5_000);
                idle.add(s);
            }
            assertThat(probe(server.port())).isEqualTo("HTTP/1.1 200 OK");
            assertThat(idle.get(0).getInputStream().read()).as("the oldest idle connection was closed").isEqualTo(-1);
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
    }

    @Test
    void liveIsAnsweredWhileEveryWorkerIsBusyWithMetrics() throws Exception {
        CountDownLatch entered = new CountDownLatch(OpsServer.WORKERS);
        CountDownLatch release = new CountDownLatch(1);
        server.close();
        server = OpsServer.start("127.0.0.1", 0, () -> new IdemRuntime.Health(true, Map.of()), () -> {
            entered.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "idem_messages_total 1\n";
        });
        List<CompletableFuture<HttpResponse<String>>> scrapes = new ArrayList<>();
        try {
            for (int i = 0; i < OpsServer.WORKERS; i++) {
                scrapes.add(client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                        + "/metrics")).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString()));
            }
            assertThat(entered.await(10, TimeUnit.SECONDS)).as("both workers are in /metrics").isTrue();

            assertThat(probe(server.port())).isEqualTo("HTTP/1.1 200 OK");
        } finally {
            release.countDown();
        }
        for (CompletableFuture<HttpResponse<String>> scrape : scrapes) {
            assertThat(scrape.get(10, TimeUnit.SECONDS).body()).isEqualTo("idem_messages_total 1\n");
        }
    }

    /** Past the workers and the queue, /health/ready and /metrics are refused 503 at once, not queued for ever. */
    @Test
    void metricsPastTheWorkersAndTheQueueAreAnswered503AtOnce() throws Exception {
        CountDownLatch entered = new CountDownLatch(OpsServer.WORKERS);
        CountDownLatch release = new CountDownLatch(1);
        server.close();
        server = OpsServer.start("127.0.0.1", 0, () -> new IdemRuntime.Health(true, Map.of()), () -> {
            entered.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "idem_messages_total 1\n";
        });
        List<Socket> scrapes = new ArrayList<>();
        try {
            for (int i = 0; i < OpsServer.WORKERS + OpsServer.QUEUED + 1; i++) {
                Socket s = new Socket("127.0.0.1", server.port());
                s.setSoTimeout(10_000);
                s.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
                scrapes.add(s);
            }
            assertThat(entered.await(10, TimeUnit.SECONDS)).as("both workers are in /metrics").isTrue();
            await().atMost(Duration.ofSeconds(2)).until(() -> scrapes.stream().anyMatch(OpsServerTest::answered));

            List<Socket> refused = scrapes.stream().filter(OpsServerTest::answered).toList();
            assertThat(refused).as("one scrape past the workers and the queue").hasSize(1);
            assertThat(statusLine(refused.get(0))).isEqualTo("HTTP/1.1 503 Service Unavailable");
            scrapes.remove(refused.get(0));
            refused.get(0).close();
            assertThat(probe(server.port())).isEqualTo("HTTP/1.1 200 OK");
        } finally {
            release.countDown();
        }
        for (Socket s : scrapes) {
            try (s) {
                assertThat(statusLine(s)).as("each waiting scrape is served once a worker is free")
                        .isEqualTo("HTTP/1.1 200 OK");
            }
        }
    }

    private static boolean answered(Socket s) {
        try {
            return s.getInputStream().available() > 0;
        } catch (IOException e) {
            return false;
        }
    }

    private static String statusLine(Socket s) throws IOException {
        return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII)).readLine();
    }

    @Test
    void aMalformedOrOversizedRequestIsRefusedWithItsStatus() throws Exception {
        assertThat(raw("NONSENSE\r\n\r\n")).startsWith("HTTP/1.1 400 Bad Request");
        assertThat(raw("GET /health/live HTTP/1.1\r\nX: " + "a".repeat(OpsServer.MAX_HEAD_BYTES) + "\r\n\r\n"))
                .startsWith("HTTP/1.1 431 ");
    }

    /** The container's health check: one HTTP/1.0 request on a raw socket, answered within 2 s. */
    private static String probe(int port) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            s.setSoTimeout(2_000);
            s.getOutputStream().write("GET /health/live HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        }
    }

    private String raw(String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(5_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        }
    }
}
