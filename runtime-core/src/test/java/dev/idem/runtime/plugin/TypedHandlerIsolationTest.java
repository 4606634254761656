package dev.idem.runtime.plugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Typed handlers in JARs of {@code handlers/} that bundle another Jackson (2.17.2, the runtime's is 2.21): the
 * runtime's Jackson decodes their records honouring their Jackson annotations, since the handler's loader takes
 * {@code com.fasterxml.jackson.annotation} from the runtime, while their own code keeps its own Jackson; and a handler
 * that decodes with its own {@code ObjectMapper} ({@code PayloadCodec}) gets its own settings, its failures told by
 * path and position as well as the runtime's own.
 */
class TypedHandlerIsolationTest {

    /** Jackson 2.17.2's databind, core and annotations, copied by the build (runtime-core's pom). */
    private static final Path OTHER_JACKSON = Path.of("target", "other-jackson");

    @TempDir
    Path handlers;

    private final List<IsolatedClassLoader> loaders = new ArrayList<>();
    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private List<Path> jackson;

    @BeforeEach
    void findTheOtherJackson() throws IOException {
        try (Stream<Path> jars = Files.list(OTHER_JACKSON)) {
            jackson = jars.filter(j -> j.toString().endsWith(".jar")).sorted().toList();
        }
        assertThat(jackson).as("the build copies Jackson 2.17.2 to " + OTHER_JACKSON.toAbsolutePath()).hasSize(3);
    }

    @AfterEach
    void closeLoaders() throws IOException {
        for (IsolatedClassLoader loader : loaders) {
            loader.close();
        }
        System.getProperties().keySet().removeIf(k -> k.toString().startsWith("idem.test." + run));
    }

    /** A handler the runtime decodes for: an annotated record, and a report of which Jackson its own code sees. */
    private void runtimeDecodes() {
        FixtureJar.in(handlers, "runtime-decodes.jar").bundle(jackson)
                .source("shop.Order", """
                        package shop;
                        import com.fasterxml.jackson.annotation.JsonProperty;
                        public record Order(@JsonProperty("order_id") String orderId, int quantity) { }
                        """)
                .source("shop.OrderHandler", """
                        package shop;
                        import dev.idem.api.*;
                        import com.fasterxml.jackson.databind.ObjectMapper;
                        public class OrderHandler implements TypedHandler<Order> {
                          public void handle(Order order, Message message, HandlerContext context) throws Exception {
                            ObjectMapper own = new ObjectMapper();
                            System.setProperty("idem.test.%s.runtime-decodes", order.orderId() + "|" + order.quantity()
                                + "|" + com.fasterxml.jackson.databind.cfg.PackageVersion.VERSION
                                + "|" + (ObjectMapper.class.getClassLoader() == getClass().getClassLoader())
                                + "|" + own.writeValueAsString(order));
                          }
                        }
                        """.formatted(run))
                .build();
    }

    /** A handler that decodes and encodes with its own Jackson 2.17 mapper, in snake case. */
    private void ownDecodes() {
        FixtureJar.in(handlers, "own-decodes.jar").bundle(jackson)
                .source("billing.Line", """
                        package billing;
                        public record Line(String orderId, int quantity) { }
                        """)
                .source("billing.LineHandler", """
                        package billing;
                        import dev.idem.api.*;
                        import com.fasterxml.jackson.databind.*;
                        import java.util.Map;
                        public class LineHandler implements TypedHandler<Line>, PayloadCodec {
                          private static final ObjectMapper MAPPER = new ObjectMapper()
                              .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
                          public void handle(Line line, Message message, HandlerContext context) {
                            context.send("billed", line.orderId(), new Line(line.orderId(), line.quantity() * 10), Map.of());
                          }
                          public <T> T decode(byte[] payload, Class<T> type) throws Exception {
                            return MAPPER.readValue(payload, type);
                          }
                          public byte[] encode(Object value) throws Exception {
                            return MAPPER.writeValueAsBytes(value);
                          }
                        }
                        """)
                .build();
    }

    private List<IsolatedClassLoader> load() {
        List<IsolatedClassLoader> found = PluginDirectories.handlers(handlers, getClass().getClassLoader());
        loaders.addAll(found);
        return found;
    }

    private static IdemRuntime start(InMemoryBroker broker, List<IsolatedClassLoader> loaders) {
        String yaml = """
                broker: { type: memory }
                store: { type: caffeine }
                pipelines:
                  orders:
                    source: orders
                    handler: shop.OrderHandler
                    payload: { format: json }
                  billing:
                    source: billing
                    handler: billing.LineHandler
                    payload: { format: json }
                """;
        return Idem.builder().configYaml(yaml).env(Map.of()).broker("memory", broker).handlerLoaders(loaders).start();
    }

    private static void publish(InMemoryBroker broker, String queue, String id, String json) {
        broker.publish(queue, new OutboundMessage(null, null, Map.of("message-id", id), json.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void theRuntimeDecodesAHandlersAnnotatedRecordWhileTheHandlersCodeKeepsItsOwnJackson() {
        runtimeDecodes();
        ownDecodes();
        InMemoryBroker broker = new InMemoryBroker();
        try (IdemRuntime runtime = start(broker, load())) {
            publish(broker, "orders", "m-1", "{\"order_id\":\"o-1\",\"quantity\":2}");
            await().atMost(Duration.ofSeconds(10)).until(() -> System.getProperty("idem.test." + run + ".runtime-decodes") != null);
        }

        assertThat(System.getProperty("idem.test." + run + ".runtime-decodes"))
                .as("the annotation honoured by the runtime's Jackson; Jackson 2.17.2 from the JAR for the handler's own"
                        + " code, which reads the same annotation (2.17 writes a renamed record component last)")
                .isEqualTo("o-1|2|2.17.2|true|{\"quantity\":2,\"order_id\":\"o-1\"}");
    }

    @Test
    void aHandlerJarsLoaderLendsOnlyJacksonsAnnotationsAPluginsLendsNone() throws Exception {
        runtimeDecodes();
        IsolatedClassLoader handler = load().get(0);
        assertThat(handler.location()).endsWith("runtime-decodes.jar");
        try (IsolatedClassLoader plugin = IsolatedClassLoader.forJar(handlers.resolve("runtime-decodes.jar"), "plugin",
                getClass().getClassLoader())) {
            assertThat(Class.forName("com.fasterxml.jackson.annotation.JsonProperty", false, handler))
                    .isSameAs(JsonProperty.class);
            assertThat(Class.forName("com.fasterxml.jackson.databind.ObjectMapper", false, handler).getClassLoader())
                    .isSameAs(handler);
            assertThat(Class.forName("com.fasterxml.jackson.core.JsonParser", false, handler).getClassLoader())
                    .isSameAs(handler);
            assertThat(Class.forName("com.fasterxml.jackson.annotation.JsonProperty", false, plugin).getClassLoader())
                    .isSameAs(plugin);
        }
    }

    @Test
    void aHandlerWithItsOwnMapperDecodesAndEncodesWithItAndItsFailuresArePlacedToo() {
        runtimeDecodes();
        ownDecodes();
        InMemoryBroker broker = new InMemoryBroker();
        List<InboundMessage> billed = new ArrayList<>();
        List<InboundMessage> dead = new ArrayList<>();
        try (IdemRuntime runtime = start(broker, load())) {
            publish(broker, "billing", "b-1", "{\"order_id\":\"o-1\",\"quantity\":2}");
            publish(broker, "billing", "b-2", "{\"order_id\":\"o-2\",\n\"quantity\":\"SECRET\"}");
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                billed.addAll(broker.drain("billed"));
                dead.addAll(broker.drain("billing.DLQ"));
                return billed.size() == 1 && dead.size() == 1;
            });
        }

        assertThat(new String(billed.get(0).payload(), StandardCharsets.UTF_8))
                .isEqualTo("{\"order_id\":\"o-1\",\"quantity\":20}");
        assertThat(dead.get(0).headers())
                .containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "invalid-payload")
                .containsEntry(InMemoryBroker.DEAD_LETTER_DETAIL,
                        "Invalid payload at $.quantity (line 2, column 12): expected an integer (int), found a string");
    }
}
