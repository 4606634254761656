package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.PayloadCodec;
import dev.idem.api.TypedHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ConfigException;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Typed payloads through the whole pipeline (in-memory broker, Caffeine store): a {@link TypedHandler} gets its
 * record, decoded on the worker; a payload that does not read is dead-lettered as {@code invalid-payload} with its
 * path, line and column, the handler never run, its key released, counted, and logged without its content.
 */
class TypedPayloadsTest {

    public record Item(String sku, int quantity) {
    }

    public record Order(String orderId, BigDecimal total, List<Item> items) {
    }

    public record PaymentRequested(String orderId, BigDecimal amount) {
    }

    /** A mutable payload, to show that each run gets a fresh one. */
    public static final class Counter {
        public int value;
    }

    private static final String JSON = "payload: {format: json}\n";

    private final PipelineHarness harness = new PipelineHarness();
    private final List<Order> received = new CopyOnWriteArrayList<>();
    private final Logger runLog = (Logger) LoggerFactory.getLogger(RunStrategy.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @TempDir
    Path dir;

    @BeforeEach
    void capture() {
        logged.start();
        runLog.addAppender(logged);
    }

    @AfterEach
    void close() {
        runLog.detachAppender(logged);
        harness.close();
    }

    private TypedHandler<Order> recording() {
        return TypedHandler.of(Order.class, (order, message, context) -> received.add(order));
    }

    private List<InboundMessage> awaitDeadLetters(int expected) {
        List<InboundMessage> dead = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            dead.addAll(harness.broker.drain(DLQ));
            return dead.size() >= expected;
        });
        return dead;
    }

    @Test
    void aTypedHandlerGetsItsRecordAndTheMessageBesideIt() {
        List<String> keys = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config(JSON), TypedHandler.of(Order.class, (order, message, context) -> {
            received.add(order);
            keys.add(message.idempotencyKey().orElseThrow() + "@" + message.attempt());
            assertThat(message.payloadAs(Order.class)).as("the run's own payload").isSameAs(order);
        }));

        harness.publish("o-1", "{\"orderId\":\"o-1\",\"total\":12.50,\"items\":[{\"sku\":\"Zoë-🚀\",\"quantity\":2}]}");
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(received).containsExactly(new Order("o-1", new BigDecimal("12.50"), List.of(new Item("Zoë-🚀", 2))));
        assertThat(keys).containsExactly("o-1@1");
    }

    @Test
    void aPayloadThatIsNotJsonIsDeadLetteredWithWhereItBreaksAndTheHandlerNeverRuns() {
        IdemRuntime runtime = harness.start(config(JSON), recording());

        harness.publish("o-1", "{\"orderId\":\"SECRET-card-4111\",\n \"total\": 12.50,,}");
        InboundMessage dead = awaitDeadLetters(1).get(0);

        assertThat(received).isEmpty();
        assertThat(dead.headers())
                .containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-payload")
                .containsEntry(InMemoryBroker.ATTEMPTS, "1")
                .containsEntry(InMemoryBroker.DEAD_LETTER_DETAIL, "Invalid payload at $.total (line 2, column 17):"
                        + " expected double-quote to start field name");
        assertThat(count(runtime, "invalid-payload")).isEqualTo(1);
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
        assertThat(count(runtime, "failed")).as("the handler did not fail: it did not run").isZero();
        assertThat(count(runtime, "retried")).as("reading it again cannot help").isZero();
        assertThat(count(runtime, "processed")).isZero();
    }

    @Test
    void theLogLineNamesThePathAndPositionNeverThePayload() {
        IdemRuntime runtime = harness.start(config(JSON), recording());

        harness.publish("o-1", "{\"orderId\":\"o-1\",\"total\":\"SECRET-4111-1111\",\"items\":[]}");
        awaitDeadLetters(1);
        await().until(() -> count(runtime, "invalid-payload") == 1);

        List<String> lines = logged.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        assertThat(lines).anySatisfy(line -> assertThat(line).isEqualTo("Pipeline 'orders': message key 'o-1' (broker id"
                + " mem-1) from orders has an invalid payload; dead-lettering it: Invalid payload at $.total (line 1, column 26):"
                + " expected a number (BigDecimal), found a string"));
        assertThat(lines).noneSatisfy(line -> assertThat(line).contains("SECRET"));
        assertThat(logged.list).allSatisfy(event -> assertThat(event.getThrowableProxy()).isNull());
    }

    @Test
    void anInvalidPayloadsKeyIsReleasedSoThatTheFixedReplayRuns() {
        IdemRuntime runtime = harness.start(config(JSON), recording());

        harness.publish("o-1", "{\"orderId\":\"o-1\",\"items\":[{\"sku\":\"A\",\"quantity\":\"two\"}]}");
        awaitDeadLetters(1);
        harness.publish("o-1", "{\"orderId\":\"o-1\",\"items\":[{\"sku\":\"A\",\"quantity\":2}]}");
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(received).containsExactly(new Order("o-1", null, List.of(new Item("A", 2))));
        assertThat(count(runtime, "duplicate")).isZero();
    }

    @Test
    void aSchemaViolationIsDeadLetteredBeforeDecoding() throws IOException {
        Path schema = Files.writeString(dir.resolve("order.schema.json"), """
                {"type": "object", "required": ["orderId"],
                 "properties": {"orderId": {"type": "string", "pattern": "^o-[0-9]+$"}, "total": {"minimum": 0}}}
                """);
        IdemRuntime runtime = harness.start(config("payload:\n  format: json\n  schema: " + schema + "\n"),
                recording());

        harness.publish("o-1", "{\"orderId\":\"o-1\",\"total\":1}");
        harness.publish("o-2", "{\"orderId\":\"SECRET\",\"total\":1}");
        harness.publish("o-3", "{\"orderId\":\"o-3\",\"total\":-1}");
        List<InboundMessage> dead = awaitDeadLetters(2);
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(received).extracting(Order::orderId).containsExactly("o-1");
        assertThat(dead).extracting(m -> m.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).containsExactlyInAnyOrder(
                "Invalid payload at $.orderId (line 1, column 12): expected what the schema's pattern says: does not"
                        + " match the regex pattern ^o-[0-9]+$",
                "Invalid payload at $.total (line 1, column 26): expected what the schema's minimum says: must have a"
                        + " minimum value of 0");
        assertThat(count(runtime, "invalid-payload")).isEqualTo(2);
    }

    @Test
    void aPlainHandlerUnderJsonGetsOnlyWellFormedJsonAndDecodesWhatItWants() {
        List<Object> decoded = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config(JSON), (message, context) -> decoded.add(
                message.header("type").orElse("").equals("item") ? message.payloadAs(Item.class)
                        : message.payloadAs(Order.class)));

        harness.broker.publish(PipelineHarness.QUEUE, new OutboundMessage(null, null,
                Map.of("message-id", "i-1", "type", "item"), "{\"sku\":\"A\",\"quantity\":1}".getBytes(StandardCharsets.UTF_8)));
        harness.publish("o-1", "{\"orderId\":\"o-1\"}");
        harness.publish("o-2", "{\"orderId\":\"o-2\"} trailing");
        harness.broker.publish(PipelineHarness.QUEUE, new OutboundMessage(null, null,
                Map.of("message-id", "i-2", "type", "item"), "{\"sku\":\"A\",\"quantity\":1.5}".getBytes(StandardCharsets.UTF_8)));
        List<InboundMessage> dead = awaitDeadLetters(2);
        await().until(() -> count(runtime, "processed") == 2);

        assertThat(decoded).containsExactlyInAnyOrder(new Item("A", 1), new Order("o-1", null, null));
        assertThat(dead).extracting(m -> m.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).containsExactlyInAnyOrder(
                "Invalid payload at $ (line 1, column 19): expected the end of the payload after its one JSON value",
                "Invalid payload at $.quantity (line 1, column 23): expected an integer (int), found a decimal number");
        assertThat(count(runtime, "invalid-payload")).isEqualTo(2);
    }

    @Test
    void textRefusesInvalidUtf8AndATypedStringHandlerGetsTheText() {
        List<String> texts = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config("payload: {format: text}\n"),
                TypedHandler.of(String.class, (text, message, context) -> texts.add(text)));

        harness.publish("t-1", "héllo 🚀\nworld");
        harness.broker.publish(PipelineHarness.QUEUE, new OutboundMessage(null, null, Map.of("message-id", "t-2"),
                new byte[] {'o', 'k', '\n', 'a', (byte) 0xC3, (byte) 0x28}));
        InboundMessage dead = awaitDeadLetters(1).get(0);
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(texts).containsExactly("héllo 🚀\nworld");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL))
                .isEqualTo("Invalid payload at line 2, column 2: expected UTF-8 text (byte 5 starts no UTF-8 character)");
    }

    @Test
    void sendWritesAnObjectAsJsonAndAStringAsItsText() {
        IdemRuntime runtime = harness.start(config(JSON), TypedHandler.of(Order.class, (order, message, context) -> {
            context.send("payments", order.orderId(), new PaymentRequested(order.orderId(), order.total()), Map.of());
            context.send("notes", "paid " + order.orderId(), Map.of());
            context.send("raw", (Object) new byte[] {1, 2}, Map.of());
        }));

        harness.publish("o-1", "{\"orderId\":\"o-1\",\"total\":12.50}");
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(new String(harness.broker.drain("payments").get(0).payload(), StandardCharsets.UTF_8))
                .isEqualTo("{\"orderId\":\"o-1\",\"amount\":12.50}");
        assertThat(new String(harness.broker.drain("notes").get(0).payload(), StandardCharsets.UTF_8)).isEqualTo("paid o-1");
        assertThat(harness.broker.drain("raw").get(0).payload()).containsExactly(1, 2);
    }

    @Test
    void eachRunGetsAFreshPayloadSoARetryDoesNotSeeWhatAFailedRunChanged() {
        List<Integer> seen = new CopyOnWriteArrayList<>();
        AtomicInteger runs = new AtomicInteger();
        IdemRuntime runtime = harness.start(config(JSON), TypedHandler.of(Counter.class, (counter, message, context) -> {
            seen.add(counter.value);
            counter.value = 99;
            if (runs.incrementAndGet() == 1) {
                throw new IllegalStateException("the first run fails (test)");
            }
        }));

        harness.publish("c-1", "{\"value\":1}");
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(seen).containsExactly(1, 1);
    }

    /** A handler that decodes its own payloads: the runtime checks the JSON, then hands the bytes to the codec. */
    public static final class OwnCodecHandler implements TypedHandler<Item>, PayloadCodec {
        final List<Item> items = new CopyOnWriteArrayList<>();

        @Override
        public void handle(Item item, Message message, HandlerContext context) {
            items.add(item);
            context.send("out", item, Map.of());
        }

        @Override
        public <T> T decode(byte[] payload, Class<T> type) {
            String text = new String(payload, StandardCharsets.UTF_8);
            if (!text.startsWith("{\"sku\":")) {
                throw new IllegalArgumentException("SECRET " + text);
            }
            return type.cast(new Item(text.substring(8, text.indexOf('"', 8)), 1));
        }

        @Override
        public byte[] encode(Object value) {
            return ("item:" + ((Item) value).sku()).getBytes(StandardCharsets.UTF_8);
        }
    }

    @Test
    void aHandlersOwnCodecDecodesAndEncodesAndWhatItRefusesIsAnInvalidPayload() {
        OwnCodecHandler handler = new OwnCodecHandler();
        IdemRuntime runtime = harness.start(config(JSON), handler);

        harness.publish("i-1", "{\"sku\":\"A\"}");
        harness.publish("i-2", "{\"other\":\"SECRET\"}");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(handler.items).containsExactly(new Item("A", 1));
        assertThat(new String(harness.broker.drain("out").get(0).payload(), StandardCharsets.UTF_8)).isEqualTo("item:A");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL)).isEqualTo("Invalid payload at $: expected a"
                + " payload the handler's own decoder reads as Item (it threw java.lang.IllegalArgumentException)");
    }

    @Test
    void aHandlerThatKeepsTheDefaultBytesPipelineRunsAsBefore() {
        List<String> payloads = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config(""), (message, context) -> payloads.add(message.payloadAsString()));

        harness.publish("b-1", "not JSON {");
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(payloads).containsExactly("not JSON {");
    }

    private ConfigException refused(String settings, MessageHandler handler) {
        InMemoryBroker broker = new InMemoryBroker();
        try {
            Idem.builder().configYaml(config(settings)).env(Map.of()).broker("memory", broker)
                    .store("caffeine", harness.store).handler("orders", handler).validate();
        } catch (ConfigException e) {
            return e;
        } finally {
            broker.close();
        }
        throw new AssertionError("expected the configuration to be refused: " + settings);
    }

    /** Declares its payload type in its class, as a handler named in configuration does. */
    public static class OrderHandler implements TypedHandler<Order> {
        @Override
        public void handle(Order order, Message message, HandlerContext context) {
        }
    }

    /** A payload type no JSON can become. */
    public interface Shape {
    }

    @Test
    void checkRefusesATypedHandlerWhosePayloadsTheFormatCannotGive() {
        assertThat(refused("payload: {format: bytes}\n", new OrderHandler()).getMessage()).contains("Handler "
                + OrderHandler.class.getName() + " of pipeline 'orders' takes " + Order.class.getName() + " payloads,"
                + " but pipelines.orders.payload.format is bytes, which hands over bytes. Set"
                + " pipelines.orders.payload.format: json (or leave it out)");
        assertThat(refused("payload: {format: bytes}\n", TypedHandler.of(String.class, (s, m, c) -> { })).getMessage())
                .contains("Set pipelines.orders.payload.format: text (or json)");
        assertThat(refused(JSON, (TypedHandler<Order>) (o, m, c) -> { }).getMessage())
                .contains("does not say which type its payloads are").contains("TypedHandler.of(SomeType.class");
        assertThat(refused(JSON, TypedHandler.of(Shape.class, (s, m, c) -> { })).getMessage())
                .contains("takes " + Shape.class.getName() + " payloads, which Jackson cannot create");
        assertThat(refused("payload: {schema: " + dir.resolve("absent.json") + "}\n", new OrderHandler())
                .getMessage()).contains("absent.json (pipelines.orders.payload.schema) does not exist");
        assertThat(refused("payload: {format: text, schema: " + dir.resolve("absent.json") + "}\n", (m, c) -> { })
                .getMessage()).contains("pipelines.orders.payload.schema checks JSON payloads, but"
                        + " pipelines.orders.payload.format is text; set payload.format: json, or remove payload.schema");
    }

    @Test
    void aSchemaNeedsJsonWhichAHandlerOfBytesDoesNotImply() throws IOException {
        Path schema = Files.writeString(dir.resolve("any.schema.json"), "{}");

        assertThat(refused("payload: {schema: " + schema + "}\n", (m, c) -> { }).getMessage()).contains(
                "pipelines.orders.payload.schema checks JSON payloads, but handler ").contains(" takes bytes payloads,"
                + " so pipelines.orders.payload.format left out is bytes. Set pipelines.orders.payload.format: json");
    }

    @Test
    void aTypedHandlerNeedsNoFormatSetting() {
        IdemRuntime runtime = harness.start(config(""), new OrderHandler() {
            @Override
            public void handle(Order order, Message message, HandlerContext context) {
                received.add(order);
            }
        });

        harness.publish("o-1", "{\"orderId\":\"o-1\"}");
        harness.publish("o-2", "not JSON");
        InboundMessage dead = awaitDeadLetters(1).get(0);
        await().until(() -> count(runtime, "processed") == 1);

        assertThat(received).containsExactly(new Order("o-1", null, null));
        assertThat(dead.headers()).containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-payload");
    }

    @Test
    void typedHandlersWithBytesOrTheirOwnCodecNeedNoJson() {
        assertThatThrownBy(() -> refused("", TypedHandler.of(byte[].class, (b, m, c) -> { })))
                .isInstanceOf(AssertionError.class);
        assertThatThrownBy(() -> refused("", new OwnCodecHandler())).isInstanceOf(AssertionError.class);
    }
}
