package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.IdemRuntime;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
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
}
