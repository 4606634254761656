package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ConfigException;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Secret;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The console's API and its security, on a real runtime (the in-memory broker, the Caffeine store) behind the real
 * ops port on an ephemeral port: what it shows, who may read, who may act, and that every action is logged.
 */
class ConsoleTest {

    static final String TOKEN = "console-test-token";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A handler that completes at once, but holds {@code stuck-*} keys until {@link #unblock} opens. */
    static final class Handler implements MessageHandler {
        final CountDownLatch unblock = new CountDownLatch(1);
        final CountDownLatch stuck = new CountDownLatch(1);

        @Override
        public void handle(Message message, HandlerContext context) throws Exception {
            if (message.idempotencyKey().orElse("").startsWith("stuck")) {
                stuck.countDown();
                unblock.await(30, TimeUnit.SECONDS);
            }
        }
    }

    /** A runtime with one pipeline {@code orders} on the in-memory broker and the Caffeine store, served. */
    static final class Served implements AutoCloseable {
        final InMemoryBroker broker = new InMemoryBroker();
        final Handler handler = new Handler();
        final PrometheusMeterRegistry registry = Metrics.prometheus();
        final IdemRuntime runtime;
        final OpsServer server;

        Served(Secret token, boolean loopback) {
            runtime = Idem.builder().configYaml("""
                    broker: {type: memory}
                    store: {type: caffeine}
                    pipelines:
                      orders: {source: orders, handler-timeout: 1m}
                    runtime: {summary-interval: 0s}
                    """).broker("memory", broker).handler("orders", handler).meterRegistry(registry).start();
            Console console = new Console(new ConsoleApi(runtime), new ConsoleAccess(token, loopback, System::nanoTime));
            server = OpsServer.bind("127.0.0.1", 0).serve(runtime, registry, console);
        }

        void publish(String id) {
            broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", id),
                    "{}".getBytes(StandardCharsets.UTF_8)));
        }

        String base() {
            return "http://127.0.0.1:" + server.port();
        }

        @Override
        public void close() {
            handler.unblock.countDown();
            server.close();
            runtime.stop(Duration.ofSeconds(5));
        }
    }

    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
            .followRedirects(HttpClient.Redirect.NEVER).build();
    private Served served;

    @AfterEach
    void stop() {
        if (served != null) {
            served.close();
        }
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(served.base() + path)).timeout(Duration.ofSeconds(5));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return client.send(b.GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> post(String path, String contentType, String body, String... headers)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(served.base() + path)).timeout(Duration.ofSeconds(5))
                .header("Content-Type", contentType);
        if (headers.length > 0) {
            b.headers(headers);
        }
        return client.send(b.POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> release(String id, String... headers) throws Exception {
        return post("/console/api/keys/release", "application/json",
                "{\"pipeline\": \"orders\", \"id\": \"" + id + "\"}", headers);
    }

    private static JsonNode json(HttpResponse<String> response) throws Exception {
        return JSON.readTree(response.body());
    }

    /** Logs in through the form; answers the session cookie ({@code name=value}). */
    private String logIn() throws Exception {
        HttpResponse<String> login = post("/console/login", "application/x-www-form-urlencoded",
                "token=" + URLEncoder.encode(TOKEN, StandardCharsets.UTF_8));
        assertThat(login.statusCode()).isEqualTo(303);
        String setCookie = login.headers().firstValue("Set-Cookie").orElseThrow();
        assertThat(setCookie).contains("HttpOnly").containsIgnoringCase("SameSite=Strict").contains("Path=/console");
        return setCookie.substring(0, setCookie.indexOf(';'));
    }

    @Test
    void onLoopbackShowsPipelinesFiguresAndKeysWithoutTheToken() throws Exception {
        served = new Served(new Secret(TOKEN), true);
        for (int i = 0; i < 5; i++) {
            served.publish("m-" + i);
        }
        served.publish("m-0"); // a duplicate

        JsonNode pipelines = json(get("/console/api/pipelines"));
        assertThat(pipelines.path("keyLookup").asBoolean()).isTrue();
        JsonNode orders = pipelines.path("pipelines").get(0);
        assertThat(orders.path("name").asText()).isEqualTo("orders");
        assertThat(orders.path("source").asText()).isEqualTo("orders");
        assertThat(orders.path("store").asText()).isEqualTo("caffeine");
        assertThat(orders.path("mode").asText()).isEqualTo("plain");
        assertThat(orders.path("state").asText()).isEqualTo("running");

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            JsonNode p = json(get("/console/api/metrics")).path("pipelines").get(0);
            assertThat(p.path("messages").path("processed").asLong()).isEqualTo(5);
            assertThat(p.path("messages").path("duplicate").asLong()).isEqualTo(1);
            assertThat(p.path("inFlight").asLong()).isZero();
            assertThat(p.path("store").path("claim").path("count").asLong()).isPositive();
            assertThat(p.path("messages").fieldNames()).toIterable()
                    .containsExactly("processed", "duplicate", "stale", "rejected", "retried", "dead-lettered");
        });

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(json(get("/console/api/history"))
                .path("samples")).as("sampled from the start, every 2 s").isNotEmpty()
                .allSatisfy(sample -> assertThat(sample.path("pipelines").get(0).path("name").asText())
                        .isEqualTo("orders")));

        JsonNode completed = json(get("/console/api/keys?pipeline=orders&id=m-1"));
        assertThat(completed.path("state").asText()).isEqualTo("completed");
        assertThat(completed.path("attempts").asInt()).isEqualTo(1);
        assertThat(completed.path("expiresAt").asText()).isNotEmpty();
        assertThat(json(get("/console/api/keys?pipeline=orders&id=never")).path("state").asText()).isEqualTo("absent");
        assertThat(get("/console/api/keys?pipeline=nope&id=x").statusCode()).isEqualTo(404);
        assertThat(get("/console/api/keys?pipeline=orders").statusCode()).isEqualTo(400);

        HttpResponse<String> page = get("/console/");
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("Idem console").doesNotContain(TOKEN);
        assertThat(page.headers().firstValue("Content-Security-Policy").orElseThrow()).contains("default-src 'none'");
        assertThat(get("/console").headers().firstValue("Location")).hasValue("/console/");
        assertThat(get("/console/assets/uPlot.iife.min.js").body()).contains("uPlot");
        assertThat(get("/console/assets/console.js").statusCode()).isEqualTo(200);
        assertThat(get("/console/assets/nope.js").statusCode()).isEqualTo(404);
        assertThat(json(get("/console/api/session")).path("actions").asBoolean()).isFalse();
        assertThat(get("/metrics").body()).contains("idem_messages_total");
    }

    @Test
    void offLoopbackEveryPageAndCallNeedsTheToken() throws Exception {
        served = new Served(new Secret(TOKEN), false);

        HttpResponse<String> refused = get("/console/api/pipelines");
        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(refused.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(v -> v.startsWith("Bearer"));
        assertThat(get("/console/api/metrics", "Authorization", "Bearer wrong").statusCode()).isEqualTo(401);
        assertThat(get("/console/api/keys?pipeline=orders&id=x").statusCode()).isEqualTo(401);
        assertThat(get("/console/").headers().firstValue("Location")).hasValue("/console/login");
        assertThat(get("/console/api/pipelines", "Authorization", "Bearer " + TOKEN).statusCode()).isEqualTo(200);

        HttpResponse<String> wrong = post("/console/login", "application/x-www-form-urlencoded", "token=nope");
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.headers().firstValue("Set-Cookie")).isEmpty();
        String cookie = logIn();
        assertThat(get("/console/", "Cookie", cookie).statusCode()).isEqualTo(200);
        JsonNode session = json(get("/console/api/session", "Cookie", cookie));
        assertThat(session.path("authenticated").asBoolean()).isTrue();
        assertThat(session.path("csrf").asText()).hasSizeGreaterThan(20);
        assertThat(get("/console/api/session", "Cookie", "idem-console=forged").statusCode()).isEqualTo(401);
    }

    @Test
    void releasingAStuckClaimNeedsTheTokenAndTheCsrfTokenAndIsLogged() throws Exception {
        Logger consoleLog = (Logger) LoggerFactory.getLogger(Console.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        consoleLog.addAppender(logged);
        try {
            served = new Served(new Secret(TOKEN), true);
            served.publish("stuck-1");
            assertThat(served.handler.stuck.await(10, TimeUnit.SECONDS)).isTrue();
            JsonNode claimed = json(get("/console/api/keys?pipeline=orders&id=stuck-1"));
            assertThat(claimed.path("state").asText()).isEqualTo("claimed");
            assertThat(claimed.path("leaseUntil").asText()).isNotEmpty();

            assertThat(release("stuck-1").statusCode()).as("no token").isEqualTo(401);
            assertThat(release("stuck-1", "Authorization", "Bearer wrong").statusCode()).isEqualTo(401);
            String cookie = logIn();
            String csrf = json(get("/console/api/session", "Cookie", cookie)).path("csrf").asText();
            assertThat(release("stuck-1", "Cookie", cookie).statusCode()).as("no CSRF token").isEqualTo(403);
            assertThat(release("stuck-1", "Cookie", cookie, ConsoleAccess.CSRF_HEADER, "forged").statusCode())
                    .isEqualTo(403);
            assertThat(release("stuck-1", "Cookie", cookie, ConsoleAccess.CSRF_HEADER, csrf, "Origin",
                    "http://evil.example").statusCode()).as("another origin").isEqualTo(403);
            assertThat(json(get("/console/api/keys?pipeline=orders&id=stuck-1")).path("state").asText())
                    .as("nothing refused touched the key").isEqualTo("claimed");

            HttpResponse<String> released = release("stuck-1", "Cookie", cookie, ConsoleAccess.CSRF_HEADER, csrf,
                    "Origin", served.base());
            assertThat(released.statusCode()).isEqualTo(200);
            assertThat(json(released).path("released").asBoolean()).isTrue();
            assertThat(json(released).path("was").path("state").asText()).isEqualTo("claimed");
            assertThat(json(get("/console/api/keys?pipeline=orders&id=stuck-1")).path("state").asText())
                    .isEqualTo("absent");
            HttpResponse<String> again = release("stuck-1", "Authorization", "Bearer " + TOKEN);
            assertThat(json(again).path("released").asBoolean()).as("a script's bearer token needs no CSRF token")
                    .isFalse();

            served.publish("done-1");
            await().atMost(Duration.ofSeconds(10)).until(() -> json(get("/console/api/keys?pipeline=orders&id=done-1"))
                    .path("state").asText().equals("completed"));
            assertThat(release("done-1", "Authorization", "Bearer " + TOKEN).statusCode())
                    .as("a completed key is no stuck claim").isEqualTo(409);

            assertThat(logged.list).map(ILoggingEvent::getFormattedMessage)
                    .anySatisfy(m -> assertThat(m).contains("127.0.0.1").contains("released key stuck-1")
                            .contains("console session").contains("removed"))
                    .anySatisfy(m -> assertThat(m).contains("refused POST").contains("127.0.0.1"))
                    .anySatisfy(m -> assertThat(m).contains("done-1").contains("refused"))
                    .noneSatisfy(m -> assertThat(m).contains(TOKEN).contains(csrf));
        } finally {
            consoleLog.detachAppender(logged);
        }
    }

    @Test
    void withoutATokenTheConsoleOnlyShows() throws Exception {
        served = new Served(null, true);
        assertThat(get("/console/api/pipelines").statusCode()).isEqualTo(200);
        HttpResponse<String> refused = release("x", "Authorization", "Bearer anything");
        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(json(refused).path("error").asText()).contains("none is configured");
        assertThat(post("/console/login", "application/x-www-form-urlencoded", "token=").statusCode()).isEqualTo(403);
    }

    @Test
    void offLoopbackTheConfigurationRequiresAToken() {
        String yaml = """
                broker: {type: memory}
                store: {type: caffeine}
                pipelines:
                  orders: {source: orders}
                runtime: {http: {host: 0.0.0.0}, console: {enabled: true}}
                """;
        ConfigException e = catchThrowableOfType(() -> Idem.builder().configYaml(yaml)
                .broker("memory", new InMemoryBroker()).handler("orders", new Handler()).validate(),
                ConfigException.class);
        assertThat(e).hasMessageContaining("runtime.console.enabled").hasMessageContaining("runtime.console.token");
        Idem.builder().configYaml(yaml.replace("enabled: true}", "enabled: true, token: s3cret}"))
                .broker("memory", new InMemoryBroker()).handler("orders", new Handler()).validate();
    }
}
