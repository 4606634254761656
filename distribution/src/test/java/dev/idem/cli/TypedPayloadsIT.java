package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import dev.idem.cli.typed.Order;
import dev.idem.cli.typed.OrderRecordingHandler;
import dev.idem.spi.DeadLetterReason;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Typed payloads end to end: {@code bin/idem run} of the built distribution, on the local RabbitMQ with the Caffeine
 * store, runs {@link OrderRecordingHandler} (a {@code TypedHandler<Order>} packed from {@code dev.idem.cli.typed} into
 * {@code handlers/}) in two pipelines, both checking a JSON Schema the test writes into {@code conf/}:
 * {@code strict} ({@code payload.format: json}, {@code payload.unknown-fields: fail}) and {@code lenient} (the format
 * left out, which a typed handler makes {@code json}; unknown fields ignored by default). The same mixed stream goes
 * to each pipeline's queue.
 *
 * <p>Every valid message is run once with its record decoded exactly (emoji, CJK, combining marks and escapes in
 * text; exact decimals; a field of about a megabyte); every invalid one (not JSON, cut short, trailing content, a
 * repeated name, not UTF-8, empty, against the schema, a field of the wrong type, an unknown field where that fails)
 * is dead-lettered once to {@code <queue>.DLQ} with cause {@code invalid-payload}, after one attempt, its payload kept
 * as it was, and a detail naming the JSON path, the line and column (in code points) and what was expected. No
 * invalid payload's content (each holds {@value #SECRET}) reaches a dead letter's headers, the process's output or
 * its log files. Nothing is lost: the handler's runs plus the dead letters are what was published, as the
 * {@code idem.messages} counters of {@code /metrics} say too; and a valid message published after the invalid ones
 * is processed by the same, still ready, process.
 */
class TypedPayloadsIT {

    private static final Duration WAIT = Duration.ofSeconds(40);
    /** In every invalid payload (but the empty one): it must never leave the payload. */
    private static final String SECRET = "SECRET-PII";
    private static final String PATTERN = "^ord-[0-9]{1,9}$";
    private static final String SCHEMA = """
            {"$schema": "https://json-schema.org/draft/2020-12/schema",
             "type": "object", "required": ["orderId", "total"],
             "properties": {"orderId": {"type": "string", "pattern": "%s"},
                            "total": {"type": "number", "minimum": 0}}}
            """.formatted(PATTERN);
    private static final String STRICT = "strict";
    private static final String LENIENT = "lenient";
    /** About a megabyte of UTF-8 text, CJK and emoji (outside the BMP) among ASCII: 90,000 x 5 code points. */
    private static final String LARGE = "数据🚀ab".repeat(90_000);
    private static final String DECODED_TEXT = "Zoë 🚀 王小明 東京都 한국어 👩‍👩‍👧 e\u0301 \"quoted\"\ttab\nline ✓";
    /** {@link #DECODED_TEXT} as JSON: mostly raw UTF-8, some of it escaped (a surrogate pair among them). */
    private static final String TEXT_JSON = "Zo\\u00eb \\ud83d\\ude80 王小明 東京都 한국어 👩‍👩‍👧 e\u0301"
            + " \\\"quoted\\\"\\ttab\\nline ✓";

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    /** A message the handler must get, once, as {@code expected}. */
    private record Valid(String id, String json, Order expected) {
    }

    /** A message that must be dead-lettered as {@code invalid-payload} with one of {@code details}. */
    private record Invalid(String id, byte[] payload, List<String> details) {
        Invalid(String id, byte[] payload, String detail) {
            this(id, payload, List.of(detail));
        }
    }

    /** One dead letter as the test read it from the dead-letter queue. */
    private record DeadLetter(String id, Map<String, String> headers, byte[] body) {
        String header(String name) {
            return headers.get(name);
        }
    }

    /** One line of the handler's runs file. */
    private record Run(String pipeline, String id, int attempt, Order order) {
    }

    @Test
    void validPayloadsAreDecodedExactlyOnceAndInvalidOnesDeadLetteredWithWhereAndWhatNeverTheirContent()
            throws Exception {
        String uri = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2F", "Start it with: rabbitmq-server -detached", null);
        Map<String, String> queues = new LinkedHashMap<>();
        queues.put(STRICT, "idem-typed-" + run + "-strict");
        queues.put(LENIENT, "idem-typed-" + run + "-lenient");

        List<Valid> valid = valid();
        Valid after = new Valid("ok-after", "{\"orderId\":\"ord-99\",\"total\":1.5,\"customer\":\"après 🎉\"}",
                new Order("ord-99", new BigDecimal("1.5"), "après 🎉"));
        String unknownJson = "{\"orderId\":\"ord-25\",\"total\":7,\"couponCode\":\"" + SECRET + "-coupon\"}";
        Valid unknownIgnored = new Valid("unknown-field", unknownJson, new Order("ord-25", new BigDecimal("7"), null));
        Invalid unknownRefused = invalid("unknown-field", unknownJson, "$.couponCode", "\"" + SECRET,
                "no property of this name; Order has [customer, orderId, total]");
        List<Invalid> invalid = invalid();

        Map<String, List<Valid>> expectedValid = Map.of(
                STRICT, valid,
                LENIENT, Stream.concat(valid.stream(), Stream.of(unknownIgnored)).toList());
        Map<String, List<Invalid>> expectedInvalid = Map.of(
                STRICT, Stream.concat(invalid.stream(), Stream.of(unknownRefused)).toList(),
                LENIENT, invalid);

        Installation idem = Installation.in(dir);
        int port = Installation.freePort();
        Path runsFile = idem.home.resolve("data/typed-runs.log");
        idem.env.put(OrderRecordingHandler.RUNS_ENV, runsFile.toString());
        HandlerJar.install(idem, OrderRecordingHandler.class, "typed-handler.jar");
        Files.writeString(idem.home.resolve("conf/order.schema.json"), SCHEMA, StandardCharsets.UTF_8);
        idem.writeConfig(EndToEndIT.rabbitMqBroker(uri) + """
                store: { type: caffeine }
                pipelines:
                  %s:
                    source: "%s"
                    handler: %s
                    concurrency: 4
                    payload:
                      format: json
                      unknown-fields: fail
                      schema: ${IDEM_HOME}/conf/order.schema.json
                  %s:
                    source: "%s"
                    handler: %s
                    concurrency: 4
                    payload:
                      schema: ${IDEM_HOME}/conf/order.schema.json
                runtime:
                  http: { port: %d }
                """.formatted(STRICT, queues.get(STRICT), OrderRecordingHandler.class.getName(),
                LENIENT, queues.get(LENIENT), OrderRecordingHandler.class.getName(), port));

        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        Installation.Running running = null;
        try (Connection rabbit = factory.newConnection("typed-payloads-it")) {
            Channel admin = rabbit.createChannel();
            Map<String, ConcurrentLinkedQueue<DeadLetter>> deadLetters = new TreeMap<>();
            try {
                // Declared as the adapter declares them (durable, classic), before idem runs, so nothing waits on it.
                for (Map.Entry<String, String> q : queues.entrySet()) {
                    admin.queueDeclare(q.getValue(), true, false, false, null);
                    admin.queueDeclare(q.getValue() + ".DLQ", true, false, false, null);
                    ConcurrentLinkedQueue<DeadLetter> letters = new ConcurrentLinkedQueue<>();
                    deadLetters.put(q.getKey(), letters);
                    admin.basicConsume(q.getValue() + ".DLQ", true, new DefaultConsumer(admin) {
                        @Override
                        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props,
                                byte[] body) {
                            letters.add(deadLetter(props, body));
                        }
                    });
                }
                Channel publisher = rabbit.createChannel();
                publisher.confirmSelect();

                running = idem.start("run");
                Installation.Running process = running;
                // The mixed stream, valid and invalid interleaved, to each pipeline's queue.
                for (String pipeline : queues.keySet()) {
                    List<Map.Entry<String, byte[]>> stream = new ArrayList<>();
                    List<Valid> v = expectedValid.get(pipeline);
                    List<Invalid> i = expectedInvalid.get(pipeline);
                    for (int n = 0; n < Math.max(v.size(), i.size()); n++) {
                        if (n < i.size()) {
                            stream.add(Map.entry(i.get(n).id(), i.get(n).payload()));
                        }
                        if (n < v.size()) {
                            stream.add(Map.entry(v.get(n).id(), utf8(v.get(n).json())));
                        }
                    }
                    for (Map.Entry<String, byte[]> m : stream) {
                        publish(publisher, queues.get(pipeline), m.getKey(), m.getValue());
                    }
                }

                awaitRunning(process, () -> queues.keySet().stream().allMatch(p ->
                        runs(runsFile, p).size() >= expectedValid.get(p).size()
                                && deadLetters.get(p).size() >= expectedInvalid.get(p).size()
                                && outcomes(port, p).getOrDefault("processed", 0L) >= expectedValid.get(p).size()
                                && outcomes(port, p).getOrDefault("invalid-payload", 0L)
                                        >= expectedInvalid.get(p).size()),
                        "every message of the mixed stream processed or dead-lettered",
                        () -> progress(runsFile, deadLetters, port));

                // Still healthy after the invalid ones: a valid message published now is processed.
                for (String pipeline : queues.keySet()) {
                    publish(publisher, queues.get(pipeline), after.id(), utf8(after.json()));
                }
                awaitRunning(process, () -> queues.keySet().stream().allMatch(p ->
                        runs(runsFile, p).stream().anyMatch(r -> r.id().equals(after.id()))
                                && outcomes(port, p).getOrDefault("processed", 0L)
                                        == expectedValid.get(p).size() + 1),
                        "the valid message published after the invalid ones to be processed",
                        () -> progress(runsFile, deadLetters, port));
                assertThat(ready(port)).as("GET /health/ready after the invalid payloads").isEqualTo(200);

                Map<String, Map<String, Long>> outcomes = new TreeMap<>();
                queues.keySet().forEach(p -> outcomes.put(p, outcomes(port, p)));
                assertThat(process.terminate(Duration.ofSeconds(30)))
                        .as("SIGTERM ends a graceful stop with 128+15\n%s", process.log()).isEqualTo(143);

                // ---------------------------------------------------------------- the verdict, after the stop
                SoftAssertions softly = new SoftAssertions();
                for (String pipeline : queues.keySet()) {
                    List<Valid> processedExpected = Stream.concat(expectedValid.get(pipeline).stream(),
                            Stream.of(after)).toList();
                    List<Invalid> invalidExpected = expectedInvalid.get(pipeline);
                    List<Run> runs = runs(runsFile, pipeline);
                    List<DeadLetter> letters = List.copyOf(deadLetters.get(pipeline));
                    int published = processedExpected.size() + invalidExpected.size();

                    softly.assertThat(runs).as("[%s] handler runs: each valid message once, as its record", pipeline)
                            .extracting(Run::id)
                            .containsExactlyInAnyOrderElementsOf(processedExpected.stream().map(Valid::id).toList());
                    for (Valid v : processedExpected) {
                        List<Run> of = runs.stream().filter(r -> r.id().equals(v.id())).toList();
                        if (of.size() == 1) {
                            Order got = of.get(0).order();
                            softly.assertThat(got.orderId()).as("[%s] %s orderId", pipeline, v.id())
                                    .isEqualTo(v.expected().orderId());
                            softly.assertThat(got.total()).as("[%s] %s total, exactly", pipeline, v.id())
                                    .isEqualTo(v.expected().total());
                            // Not isEqualTo, which would print a megabyte on a difference.
                            softly.assertThat(got.customer() == null ? null : got.customer().length())
                                    .as("[%s] %s customer length", pipeline, v.id())
                                    .isEqualTo(v.expected().customer() == null ? null
                                            : v.expected().customer().length());
                            softly.assertThat(Objects.equals(got.customer(), v.expected().customer()))
                                    .as("[%s] %s customer round-trips exactly: %s", pipeline, v.id(),
                                            abbreviate(got.customer()))
                                    .isTrue();
                            softly.assertThat(of.get(0).attempt()).as("[%s] %s attempt", pipeline, v.id())
                                    .isEqualTo(1);
                        }
                    }

                    softly.assertThat(letters).as("[%s] dead letters: each invalid message once", pipeline)
                            .extracting(DeadLetter::id)
                            .containsExactlyInAnyOrderElementsOf(invalidExpected.stream().map(Invalid::id).toList());
                    for (Invalid i : invalidExpected) {
                        List<DeadLetter> of = letters.stream().filter(d -> i.id().equals(d.id())).toList();
                        if (of.size() != 1) {
                            continue;
                        }
                        DeadLetter d = of.get(0);
                        softly.assertThat(d.header(DeadLetterReason.HEADER_CAUSE)).as("[%s] %s cause", pipeline, i.id())
                                .isEqualTo("invalid-payload");
                        softly.assertThat(d.header(DeadLetterReason.HEADER_DETAIL)).as("[%s] %s detail", pipeline,
                                i.id()).isIn(i.details());
                        softly.assertThat(d.header(DeadLetterReason.HEADER_ATTEMPTS))
                                .as("[%s] %s attempts (never retried)", pipeline, i.id()).isEqualTo("1");
                        softly.assertThat(d.header(DeadLetterReason.HEADER_PIPELINE)).as("[%s] %s pipeline", pipeline,
                                i.id()).isEqualTo(pipeline);
                        softly.assertThat(d.header(DeadLetterReason.ORIGIN_SOURCE)).as("[%s] %s origin", pipeline,
                                i.id()).isEqualTo(queues.get(pipeline));
                        softly.assertThat(d.headers()).as("[%s] %s: no header holds the payload's content", pipeline,
                                i.id()).allSatisfy((name, value) -> assertThat(value).as(name).doesNotContain(SECRET));
                        softly.assertThat(Arrays.equals(d.body(), i.payload()))
                                .as("[%s] %s: the dead letter keeps the payload byte for byte (%d bytes, got %d)",
                                        pipeline, i.id(), i.payload().length, d.body().length)
                                .isTrue();
                    }
                    softly.assertThat(runs).as("[%s] the handler never ran for an invalid payload", pipeline)
                            .extracting(Run::id)
                            .doesNotContainAnyElementsOf(invalidExpected.stream().map(Invalid::id).toList());
                    softly.assertThat(runs.size() + letters.size()).as("[%s] processed + dead-lettered == published",
                            pipeline).isEqualTo(published);

                    Map<String, Long> counted = outcomes.get(pipeline);
                    softly.assertThat(counted.getOrDefault("processed", 0L)).as("[%s] /metrics processed %s",
                            pipeline, counted).isEqualTo(processedExpected.size());
                    softly.assertThat(counted.getOrDefault("invalid-payload", 0L)).as("[%s] /metrics invalid-payload",
                            pipeline).isEqualTo(invalidExpected.size());
                    softly.assertThat(counted.getOrDefault("dead-lettered", 0L)).as("[%s] /metrics dead-lettered",
                            pipeline).isEqualTo(invalidExpected.size());
                    softly.assertThat(counted.getOrDefault("processed", 0L) + counted.getOrDefault("dead-lettered", 0L))
                            .as("[%s] /metrics processed + dead-lettered == published", pipeline).isEqualTo(published);
                    for (String none : List.of("failed", "retried", "duplicate")) {
                        softly.assertThat(counted.getOrDefault(none, 0L)).as("[%s] /metrics %s", pipeline, none)
                                .isZero();
                    }
                    softly.assertThat(admin.queueDeclarePassive(queues.get(pipeline)).getMessageCount())
                            .as("[%s] messages left in the source queue", pipeline).isZero();
                }

                // The log lines say where and what of each invalid payload, and nothing of its content anywhere.
                String idemLog = Files.readString(idem.home.resolve("logs/idem.log"), StandardCharsets.UTF_8);
                for (Invalid i : expectedInvalid.get(STRICT)) {
                    softly.assertThat(i.details().stream().anyMatch(idemLog::contains))
                            .as("logs/idem.log names the problem of %s, one of %s", i.id(), i.details()).isTrue();
                }
                try (Stream<Path> files = Files.walk(idem.home.resolve("logs"))) {
                    for (Path f : files.filter(Files::isRegularFile).toList()) {
                        String text = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                        softly.assertThat(text.contains(SECRET)).as("%s holds %s: %s", idem.home.relativize(f), SECRET,
                                lineWith(text, SECRET)).isFalse();
                    }
                }
                softly.assertAll();
            } finally {
                if (running != null && running.process.isAlive()) {
                    running.kill();
                }
                for (String q : queues.values()) {
                    admin.queueDelete(q);
                    admin.queueDelete(q + ".DLQ");
                }
            }
        }
    }

    // ------------------------------------------------------------------ the stream

    private static List<Valid> valid() {
        return List.of(
                new Valid("ok-plain", "{\"orderId\":\"ord-1\",\"total\":12.50,\"customer\":\"Ada Lovelace\"}",
                        new Order("ord-1", new BigDecimal("12.50"), "Ada Lovelace")),
                new Valid("ok-unicode", "{\"customer\":\"" + TEXT_JSON + "\",\n  \"orderId\":\"ord-2\", \"total\":0}",
                        new Order("ord-2", new BigDecimal("0"), DECODED_TEXT)),
                new Valid("ok-exact-decimal", "{\"orderId\":\"ord-3\",\"total\":12345678901234567890.123456789}",
                        new Order("ord-3", new BigDecimal("12345678901234567890.123456789"), null)),
                new Valid("ok-large", "{\"orderId\":\"ord-4\",\"total\":99.99,\"customer\":\"" + LARGE + "\"}",
                        new Order("ord-4", new BigDecimal("99.99"), LARGE)));
    }

    private static List<Invalid> invalid() {
        String syntax = "{\"orderId\":\"ord-20\",\"customer\":\"" + SECRET + "\",\n \"total\": 12.50,,}";
        String cut = "{\"orderId\":\"ord-21\",\"customer\":\"" + SECRET + " 王小明 🚀";
        String trailing = "{\"orderId\":\"ord-27\",\"total\":1} " + SECRET;
        String repeated = "{\"orderId\":\"ord-28\",\"total\":1,\"total\":\"" + SECRET + "\"}";
        String minimum = "{\"customer\":\"" + SECRET + " 東京 👩‍👩‍👧\",\"orderId\":\"ord-22\",\"total\":-0.01}";
        String largeWrongType = "{\"orderId\":\"ord-30\",\"customer\":\"" + LARGE + "\",\n\"total\":\"" + SECRET
                + "\"}";
        String beforeBadByte = "{\"orderId\":\"ord-26\",\"total\":1,\"customer\":\"" + SECRET + " ";
        byte[] notUtf8 = concat(utf8(beforeBadByte), new byte[] {(byte) 0xC3, (byte) 0x28}, utf8("\"}"));
        return List.of(
                new Invalid("bad-syntax", utf8(syntax),
                        "Invalid payload at $.total (line 2, column 17): expected double-quote to start field name"),
                new Invalid("bad-cut-short", utf8(cut), detail("$.customer", cut, cut.length(),
                        "the rest of the JSON value: the payload ends inside it")),
                new Invalid("bad-trailing", utf8(trailing), detail("$", trailing, trailing.indexOf(SECRET),
                        "the end of the payload after its one JSON value")),
                new Invalid("bad-repeated-name", utf8(repeated), detail("$.total", repeated,
                        repeated.lastIndexOf("\"total\""), "each name once per object: this one repeats an earlier"
                                + " name")),
                // Where the malformed sequence starts (as payload.format: text places it: "byte N starts no UTF-8
                // character"), or its offending second byte; not after it.
                new Invalid("bad-not-utf8", notUtf8, List.of(
                        detail("$.customer", beforeBadByte, beforeBadByte.length(), "UTF-8 text"),
                        detail("$.customer", beforeBadByte + "\u00c3", beforeBadByte.length() + 1, "UTF-8 text"))),
                new Invalid("bad-empty", new byte[0],
                        "Invalid payload at $ (line 1, column 1): expected a JSON value, found an empty payload"),
                invalid("bad-pattern", "{\"orderId\":\"" + SECRET + "-1\",\"total\":5}", "$.orderId",
                        "\"" + SECRET, "what the schema's pattern says: does not match the regex pattern " + PATTERN),
                new Invalid("bad-minimum", utf8(minimum), detail("$.total", minimum, minimum.indexOf("-0.01"),
                        "what the schema's minimum says: must have a minimum value of 0")),
                invalid("bad-required", "{\"customer\":\"" + SECRET + "\",\"total\":1}", "$", "{",
                        "what the schema's required says: required property 'orderId' not found"),
                invalid("bad-total-type", "{\"orderId\":\"ord-23\",\"total\":\"abc " + SECRET + "\"}", "$.total",
                        "\"abc", "what the schema's type says: string found, number expected"),
                invalid("bad-customer-type", "{\"orderId\":\"ord-24\",\"total\":1,\"customer\":{\"name\":\""
                        + SECRET + "\"}}", "$.customer", "{\"name", "a string, found an object"),
                new Invalid("bad-large-total-type", utf8(largeWrongType), detail("$.total", largeWrongType,
                        largeWrongType.indexOf("\"" + SECRET), "what the schema's type says: string found, number"
                                + " expected")));
    }

    /** An invalid payload whose problem is at the first {@code token} in it. */
    private static Invalid invalid(String id, String json, String path, String token, String expected) {
        assertThat(json).contains(token);
        return new Invalid(id, utf8(json), detail(path, json, json.indexOf(token), expected));
    }

    /** The detail of a problem at {@code path}, placed at {@code json}'s char {@code index}: line and code point. */
    private static String detail(String path, String json, int index, String expected) {
        String before = json.substring(0, index);
        int line = (int) before.chars().filter(c -> c == '\n').count() + 1;
        int lineStart = before.lastIndexOf('\n') + 1;
        int column = before.codePointCount(lineStart, before.length()) + 1;
        return "Invalid payload at " + path + " (line " + line + ", column " + column + "): expected " + expected;
    }

    // ------------------------------------------------------------------ helpers

    private static void publish(Channel channel, String queue, String id, byte[] payload) throws Exception {
        channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(id).deliveryMode(2).build(),
                payload);
        channel.waitForConfirmsOrDie(10_000);
    }

    private static DeadLetter deadLetter(AMQP.BasicProperties props, byte[] body) {
        Map<String, String> headers = new TreeMap<>();
        if (props.getHeaders() != null) {
            props.getHeaders().forEach((name, value) -> headers.put(name, value instanceof LongString s
                    ? new String(s.getBytes(), StandardCharsets.UTF_8) : String.valueOf(value)));
        }
        String id = props.getMessageId() != null ? props.getMessageId() : headers.get("message-id");
        return new DeadLetter(id, headers, body);
    }

    /** The complete lines of the handler's runs file of {@code pipeline}. */
    private static List<Run> runs(Path file, String pipeline) {
        if (!Files.exists(file)) {
            return List.of();
        }
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<Run> runs = new ArrayList<>();
        // A line still being written has no newline yet.
        for (String line : text.substring(0, text.lastIndexOf('\n') + 1).split("\n")) {
            String[] f = line.split("\t", -1);
            if (f.length == 6 && f[0].equals(pipeline)) {
                runs.add(new Run(f[0], f[1], Integer.parseInt(f[2]), new Order(OrderRecordingHandler.decode(f[3]),
                        f[4].equals("-") ? null : new BigDecimal(f[4]), OrderRecordingHandler.decode(f[5]))));
            }
        }
        return runs;
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final Pattern MESSAGES = Pattern.compile("^idem_messages_total\\{([^}]*)} ([0-9.eE+]+)$",
            Pattern.MULTILINE);
    private static final Pattern LABEL = Pattern.compile("([a-z_]+)=\"([^\"]*)\"");

    /**
     * The {@code idem.messages} counters of one pipeline by outcome, from {@code /metrics}; empty while not serving.
     * ({@code Installation.Running.outcomes} sums all pipelines.)
     */
    private static Map<String, Long> outcomes(int port, String pipeline) {
        Map<String, Long> counts = new TreeMap<>();
        try {
            String body = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
            Matcher m = MESSAGES.matcher(body);
            while (m.find()) {
                Map<String, String> labels = new TreeMap<>();
                Matcher l = LABEL.matcher(m.group(1));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
                if (pipeline.equals(labels.get("pipeline")) && labels.containsKey("outcome")) {
                    counts.merge(labels.get("outcome"), (long) Double.parseDouble(m.group(2)), Long::sum);
                }
            }
        } catch (IOException e) {
            return counts;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return counts;
    }

    private static int ready(int port) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    private static String progress(Path runsFile, Map<String, ConcurrentLinkedQueue<DeadLetter>> deadLetters,
            int port) {
        StringBuilder s = new StringBuilder();
        for (String p : deadLetters.keySet()) {
            s.append('[').append(p).append("] runs ").append(runs(runsFile, p).stream().map(Run::id).sorted().toList())
                    .append(", dead letters ").append(deadLetters.get(p).stream().map(d -> d.id() + ": "
                            + d.header(DeadLetterReason.HEADER_DETAIL)).sorted().collect(Collectors.toList()))
                    .append(", /metrics ").append(outcomes(port, p)).append('\n');
        }
        return s.toString();
    }

    /** Polls {@code condition}; fails early, with the process's log, if {@code bin/idem run} exits. */
    private static void awaitRunning(Installation.Running running, Callable<Boolean> condition, String what,
            Supplier<String> progress) {
        try {
            await().atMost(WAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(200))
                    .failFast("bin/idem run exited", () -> !running.process.isAlive()).until(condition);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError("Waiting for " + what + ": " + e.getMessage() + "\n" + progress.get()
                    + "--- log of bin/idem run\n" + running.log(), e);
        }
    }

    private static String abbreviate(String text) {
        return text == null || text.length() <= 80 ? String.valueOf(text) : text.substring(0, 80) + "... ("
                + text.length() + " chars)";
    }

    private static String lineWith(String text, String needle) {
        int at = text.indexOf(needle);
        if (at < 0) {
            return "";
        }
        int start = text.lastIndexOf('\n', at) + 1;
        int end = text.indexOf('\n', at);
        return abbreviate(text.substring(start, end < 0 ? text.length() : end));
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] concat(byte[]... parts) {
        int length = 0;
        for (byte[] p : parts) {
            length += p.length;
        }
        byte[] all = new byte[length];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, all, at, p.length);
            at += p.length;
        }
        return all;
    }
}
