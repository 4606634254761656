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
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ConfigException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Secret;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
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
            this(token, loopback, false);
        }

        Served(Secret token, boolean loopback, boolean showPayloads) {
            runtime = Idem.builder().configYaml("""
                    broker: {type: memory}
                    store: {type: caffeine}
                    pipelines:
                      orders: {source: orders, dead-letter: orders.dlq, handler-timeout: 1m}
                    runtime: {summary-interval: 0s}
                    """).broker("memory", broker).handler("orders", handler).meterRegistry(registry).start();
            ConsoleDeadLetters deadLetters = new ConsoleDeadLetters(PluginRegistry.discover(), runtime.config(),
                    broker::connect, showPayloads);
            Console console = new Console(new ConsoleApi(runtime), new ConsoleAccess(token, loopback, System::nanoTime),
                    deadLetters);
            server = OpsServer.bind("127.0.0.1", 0).serve(runtime, registry, console);
        }

        /** Puts a dead letter into {@code orders.dlq} as the runtime writes one. */
        void deadLetter(String id, String cause, String detail, int attempts, byte[] payload,
                Map<String, String> headers) {
            Map<String, String> all = new HashMap<>(headers);
            all.put("message-id", id);
            all.putAll(new DeadLetterReason(cause, detail, attempts, "orders").toHeaders());
            broker.publish("orders.dlq", new OutboundMessage(null, null, all, payload));
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
        assertThat(completed.path("starts").asInt()).isZero();
        assertThat(completed.path("expiresAt").asText()).isNotEmpty();
        StoreKey crashed = new StoreKey(completed.path("namespace").asText(), "crashed-1");
        InspectableDedupStore store = served.runtime.inspectableStore().orElseThrow();
        long token = ((ClaimResult.Acquired) store.claim(List.of(new ClaimRequest(crashed, null, Duration.ofMinutes(5),
                Duration.ofMinutes(5)))).get(0)).token();
        store.recordStart(crashed, token);
        store.recordStart(crashed, token);
        JsonNode claimed = json(get("/console/api/keys?pipeline=orders&id=crashed-1"));
        assertThat(claimed.path("state").asText()).isEqualTo("claimed");
        assertThat(claimed.path("attempts").asInt()).isEqualTo(1);
        assertThat(claimed.path("starts").asInt()).as("the starts recorded").isEqualTo(2);
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
            assertThat(claimed.path("starts").asInt()).as("a first claim records no start").isZero();

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

    private HttpResponse<String> replay(String body, String... headers) throws Exception {
        return post("/console/api/dead-letters/replay", "application/json", body, headers);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void deadLettersAreGroupedByCauseWithHeadersMaskedAndPayloadsEscapedAndCut() throws Exception {
        served = new Served(new Secret(TOKEN), true);
        served.deadLetter("a-1", "handler-failed", "java.lang.IllegalStateException: boom", 3, utf8("{\"n\": 1}"),
                Map.of("Authorization", "Bearer top-secret", "tenant", "acme"));
        served.deadLetter("a-2", "handler-failed", "java.lang.IllegalStateException: boom again", 3, utf8("{}"),
                Map.of());
        served.deadLetter("b-1", "handler-failed", "java.io.UncheckedIOException: disk", 1, utf8("{}"), Map.of());
        byte[] big = new byte[1000];
        java.util.Arrays.fill(big, (byte) 'x');
        big[0] = 0x1b; // ESC: a control character, escaped
        big[1] = (byte) 0xff; // not UTF-8
        served.deadLetter("c-1", "invalid-payload", "$.amount: expected a number", 1, big, Map.of());
        served.deadLetter("d-1", "sequence-gap", "expected 4, got 6", 0, utf8("<script>alert(1)</script>"), Map.of());
        served.broker.publish("orders.dlq", new OutboundMessage(null, null, Map.of("message-id", "other-1",
                DeadLetterReason.HEADER_CAUSE, "handler-failed", DeadLetterReason.HEADER_PIPELINE, "payments"),
                utf8("{}")));

        JsonNode answer = json(get("/console/api/dead-letters?pipeline=orders"));
        assertThat(answer.path("destination").asText()).isEqualTo("orders.dlq");
        assertThat(answer.path("read").asInt()).isEqualTo(6);
        assertThat(answer.path("otherPipelines").asInt()).isEqualTo(1);
        assertThat(answer.path("showPayloads").asBoolean()).isFalse();
        JsonNode groups = answer.path("groups");
        assertThat(groups).extracting(g -> g.path("cause").asText() + " " + g.path("exception").asText("-")
                + " " + g.path("count").asInt()).containsExactly("handler-failed java.lang.IllegalStateException 2",
                        "handler-failed java.io.UncheckedIOException 1", "invalid-payload - 1", "sequence-gap - 1");

        JsonNode a1 = groups.get(0).path("messages").get(0);
        assertThat(a1.path("key").asText()).isEqualTo("a-1");
        assertThat(a1.path("attempts").asInt()).isEqualTo(3);
        assertThat(a1.path("detail").asText()).isEqualTo("java.lang.IllegalStateException: boom");
        assertThat(a1.path("payload").asText()).isEqualTo("{\"n\": 1}");
        assertThat(a1.path("truncated").asBoolean()).isFalse();
        assertThat(a1.path("headers").path("tenant").asText()).isEqualTo("acme");
        assertThat(a1.path("headers").path("Authorization").asText()).as("a secret's value never leaves")
                .isEqualTo(ConsoleDeadLetters.MASKED);
        assertThat(a1.path("id").asText()).hasSize(64);

        JsonNode c1 = groups.get(2).path("messages").get(0);
        assertThat(c1.path("payloadBytes").asInt()).isEqualTo(1000);
        assertThat(c1.path("truncated").asBoolean()).isTrue();
        assertThat(c1.path("payload").asText()).startsWith("\\u001b\\xff")
                .isEqualTo("\\u001b\\xff" + "x".repeat(ConsoleDeadLetters.PREVIEW_BYTES - 2));
        assertThat(groups.get(3).path("messages").get(0).path("payload").asText())
                .as("text as it is: the page shows it as text, never as HTML").isEqualTo("<script>alert(1)</script>");

        assertThat(get("/console/api/dead-letters?pipeline=orders&full=true").statusCode())
                .as("whole payloads only with runtime.console.show-payloads").isEqualTo(403);
        assertThat(get("/console/api/dead-letters?pipeline=nope").statusCode()).isEqualTo(404);
        assertThat(json(get("/console/api/dead-letters?pipeline=orders")).path("read").asInt())
                .as("showing took nothing").isEqualTo(6);
        assertThat(served.broker.depth("orders.dlq")).isEqualTo(6);
    }

    @Test
    void wholePayloadsOnlyWhenTheConfigurationAllows() throws Exception {
        served = new Served(new Secret(TOKEN), true, true);
        served.deadLetter("big", "invalid-payload", "too long", 1, utf8("y".repeat(600)), Map.of());
        JsonNode cut = json(get("/console/api/dead-letters?pipeline=orders")).path("groups").get(0)
                .path("messages").get(0);
        assertThat(cut.path("payload").asText()).hasSize(ConsoleDeadLetters.PREVIEW_BYTES);
        JsonNode whole = json(get("/console/api/dead-letters?pipeline=orders&full=true")).path("groups").get(0)
                .path("messages").get(0);
        assertThat(whole.path("payload").asText()).isEqualTo("y".repeat(600));
        assertThat(whole.path("truncated").asBoolean()).isFalse();
    }

    @Test
    void replayingNeedsTheTokenAndTheCsrfTokenMovesTheSelectionOnceAndIsLogged() throws Exception {
        Logger consoleLog = (Logger) LoggerFactory.getLogger(Console.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        consoleLog.addAppender(logged);
        try {
            served = new Served(new Secret(TOKEN), true);
            served.deadLetter("r-1", "handler-failed", "java.lang.IllegalStateException: boom", 3, utf8("{}"),
                    Map.of());
            served.deadLetter("r-2", "handler-failed", "java.lang.IllegalStateException: boom", 3, utf8("{}"),
                    Map.of());
            served.deadLetter("g-1", "sequence-gap", "expected 4, got 6", 0, utf8("{}"), Map.of());
            served.deadLetter("g-2", "sequence-gap", "expected 4, got 7", 0, utf8("{}"), Map.of());
            JsonNode groups = json(get("/console/api/dead-letters?pipeline=orders")).path("groups");
            String r1 = groups.get(0).path("messages").get(0).path("id").asText();
            String body = "{\"pipeline\": \"orders\", \"ids\": [\"" + r1 + "\"]}";

            assertThat(replay(body).statusCode()).as("no token").isEqualTo(401);
            assertThat(replay(body, "Authorization", "Bearer wrong").statusCode()).isEqualTo(401);
            String cookie = logIn();
            String csrf = json(get("/console/api/session", "Cookie", cookie)).path("csrf").asText();
            assertThat(replay(body, "Cookie", cookie).statusCode()).as("no CSRF token").isEqualTo(403);
            assertThat(replay(body, "Cookie", cookie, ConsoleAccess.CSRF_HEADER, "forged").statusCode())
                    .isEqualTo(403);
            assertThat(served.broker.depth("orders.dlq")).as("nothing refused moved a dead letter").isEqualTo(4);

            HttpResponse<String> one = replay(body, "Cookie", cookie, ConsoleAccess.CSRF_HEADER, csrf);
            assertThat(one.statusCode()).isEqualTo(200);
            assertThat(json(one).path("ok").asBoolean()).isTrue();
            assertThat(json(one).path("moved").asInt()).isEqualTo(1);
            assertThat(json(one).path("skipped").asInt()).isEqualTo(3);
            assertThat(json(one).path("lines")).extracting(JsonNode::asText)
                    .anySatisfy(line -> assertThat(line).contains("moved").contains("r-1"));
            await().atMost(Duration.ofSeconds(10)).until(() -> json(get("/console/api/keys?pipeline=orders&id=r-1"))
                    .path("state").asText().equals("completed"));

            HttpResponse<String> group = replay("{\"pipeline\": \"orders\", \"cause\": \"sequence-gap\"}",
                    "Authorization", "Bearer " + TOKEN);
            assertThat(json(group).path("moved").asInt()).as("the whole group, by a script's bearer token")
                    .isEqualTo(2);
            JsonNode left = json(get("/console/api/dead-letters?pipeline=orders")).path("groups");
            assertThat(left).hasSize(1);
            assertThat(left.get(0).path("messages")).extracting(m -> m.path("key").asText()).containsExactly("r-2");
            await().atMost(Duration.ofSeconds(10)).until(() -> List.of("g-1", "g-2").stream().allMatch(id -> {
                try {
                    return json(get("/console/api/keys?pipeline=orders&id=" + id)).path("state").asText()
                            .equals("completed");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
            assertThat(served.runtime.meterRegistry().find("idem.messages").tag("outcome", "processed").counter()
                    .count()).as("each replayed message processed once").isEqualTo(3.0);
            assertThat(replay("{\"pipeline\": \"orders\"}", "Authorization", "Bearer " + TOKEN).statusCode())
                    .as("nothing selected").isEqualTo(400);

            assertThat(logged.list).map(ILoggingEvent::getFormattedMessage)
                    .anySatisfy(m -> assertThat(m).contains("127.0.0.1").contains("console session")
                            .contains("replayed 1 dead letter " + r1).contains("1 moved"))
                    .anySatisfy(m -> assertThat(m).contains("bearer token").contains("the group sequence-gap")
                            .contains("2 moved"))
                    .anySatisfy(m -> assertThat(m).contains("refused POST /console/api/dead-letters/replay"))
                    .noneSatisfy(m -> assertThat(m).contains(TOKEN).contains(csrf));
        } finally {
            consoleLog.detachAppender(logged);
        }
    }
}
