package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The built distribution as a user meets it: its layout, {@code idem demo}, {@code plugins} and {@code check}. */
class DistributionIT {

    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    @TempDir
    Path dir;

    @Test
    void layoutHasEveryFolderAndOnePluginFolderPerPlugin() {
        Path built = Installation.built();
        for (String folder : new String[] {"bin", "conf", "lib", "handlers", "data", "logs"}) {
            assertThat(built.resolve(folder)).isDirectory();
        }
        assertThat(built.resolve("conf/logback.xml")).isRegularFile();
        assertThat(built.resolve("handlers/README.md")).isRegularFile();
        for (String plugin : new String[] {"activemq", "kafka", "rabbitmq", "caffeine", "jdbc", "redis"}) {
            assertThat(built.resolve("plugins").resolve(plugin)).isDirectory();
        }
        assertThat(jars(built.resolve("lib"))).as("no plugin and no client library in lib/")
                .noneMatch(j -> j.startsWith("idem-adapter") || j.startsWith("idem-store") || j.startsWith("kafka-clients")
                        || j.startsWith("lettuce") || j.startsWith("activemq"));
        assertThat(jars(built.resolve("plugins/kafka"))).anyMatch(j -> j.startsWith("kafka-clients"))
                .noneMatch(j -> j.startsWith("idem-api") || j.startsWith("slf4j-api"));
        assertThat(jars(built.resolve("plugins/jdbc"))).anyMatch(j -> j.startsWith("h2"));
        assertThat(jars(built.resolve("handlers"))).anyMatch(j -> j.startsWith("order-handler"));
    }

    private static Stream<String> jars(Path folder) {
        try {
            return Files.list(folder).map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".jar")).toList().stream();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void demoRunsOnTheEmbeddedDefaultAndRemembersAcrossARestart() {
        Installation idem = Installation.in(dir);
        Installation.Result first = idem.run(TIMEOUT, "demo");
        assertThat(first.exitCode()).as(first.toString()).isZero();
        assertThat(first.out()).contains("Published 12 messages: 10 orders, 2 of them sent twice.")
                .contains("10 processed, 2 skipped as duplicates, 0 dead-lettered.");

        Installation.Result second = idem.run(TIMEOUT, "demo");
        assertThat(second.exitCode()).as(second.toString()).isZero();
        assertThat(second.out()).as("the store kept every key in data/ across the restart")
                .contains("0 processed, 12 skipped as duplicates, 0 dead-lettered.");

        Installation.Result stats = idem.run(TIMEOUT, "store", "stats");
        assertThat(stats.out()).as(stats.toString()).contains("store 'jdbc': 0 claimed, 10 completed");
        Installation.Result get = idem.run(TIMEOUT, "store", "get", "demo-order-3");
        assertThat(get.out()).as(get.toString()).startsWith("orders/demo-order-3: completed, attempts 1");
        Installation.Result delete = idem.run(TIMEOUT, "store", "delete", "--pipeline", "orders", "demo-order-3");
        assertThat(delete.out()).as(delete.toString()).contains("orders/demo-order-3: deleted");
        assertThat(idem.run(TIMEOUT, "store", "get", "demo-order-3").out()).contains("orders/demo-order-3: absent");

        Installation.Result third = idem.run(TIMEOUT, "demo");
        assertThat(third.out()).as("the deleted key is processed again, the rest still skipped")
                .contains("1 processed, 11 skipped as duplicates, 0 dead-lettered.");
    }

    @Test
    void runServesHealthAndMetricsAndStopsGracefullyOnSigterm() throws Exception {
        Installation idem = Installation.in(dir);
        int port = Installation.freePort();
        String config = Files.readString(idem.config())
                .replace("runtime:\n", "runtime:\n  http.port: " + port + "\n");
        idem.writeConfig(config);
        Installation.Running running = idem.start("run");
        try {
            HttpClient http = HttpClient.newHttpClient();
            await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() ->
                    get(http, port, "/health/live").statusCode() == 200);
            var ready = get(http, port, "/health/ready");
            assertThat(ready.statusCode()).as(ready.body()).isEqualTo(200);
            assertThat(ready.body()).contains("READY").contains("broker: up").contains("store: up")
                    .contains("pipeline.orders: running");
            var metrics = get(http, port, "/metrics");
            assertThat(metrics.body()).contains("idem_messages_total{").contains("jvm_memory_used_bytes")
                    .contains("idem_handler_duration_seconds");
        } finally {
            int exit = running.terminate(Duration.ofSeconds(60));
            assertThat(exit).as(running.log()).isEqualTo(143);
        }
        assertThat(running.log()).contains("Stopped; every in-flight message finished");
    }

    private static HttpResponse<String> get(HttpClient http, int port, String path)
            throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void pluginsListsEveryPluginWithItsFolder() {
        Installation.Result result = Installation.in(dir).run(TIMEOUT, "plugins");
        assertThat(result.exitCode()).as(result.toString()).isZero();
        for (String plugin : new String[] {"activemq", "kafka", "rabbitmq", "caffeine", "jdbc", "redis"}) {
            assertThat(result.out()).containsPattern("(?m)^\\S.* " + plugin + " .*plugins/" + plugin + "/");
        }
        assertThat(result.out()).contains("json-pointer").contains("header");
    }

    @Test
    void checkValidatesTheShippedConfigurationAndShowsWhatItFound() {
        Installation.Result result = Installation.in(dir).run(TIMEOUT, "check");
        assertThat(result.exitCode()).as(result.toString()).isZero();
        assertThat(result.out()).contains("is valid")
                .contains("Broker: activemq").contains("Store:  jdbc")
                .contains("orders: consumes 'orders', handler dev.idem.examples.orders.OrderPaymentHandler from handlers/order-handler");
    }

    static Stream<Arguments> brokenConfigurations() {
        String valid = """
                broker: { type: activemq, activemq: { embedded: { enabled: true, data-directory: "${IDEM_HOME}/data/activemq" } } }
                store: { type: caffeine }
                pipelines:
                  orders:
                    source: orders
                    handler: dev.idem.examples.orders.OrderPaymentHandler
                """;
        return Stream.of(
                Arguments.of("unknown key", valid.replace("    source: orders", "    source: orders\n    leese: 30s"),
                        "Unknown key pipelines.orders.leese. Did you mean 'lease'?"),
                Arguments.of("bad duration", valid.replace("    source: orders", "    source: orders\n    lease: -5s"),
                        "Invalid value '-5s' for pipelines.orders.lease"),
                Arguments.of("unknown store id", valid.replace("type: caffeine", "type: reddis"),
                        "reddis"),
                Arguments.of("missing handler class", valid.replace("OrderPaymentHandler", "OrderHandlr"),
                        "Handler class 'dev.idem.examples.orders.OrderHandlr' (pipelines.orders.handler) was not found in"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenConfigurations")
    void checkExitsWithTwoAndSaysWhatIsWrongAndWhere(String problem, String yaml, String expected) {
        Installation idem = Installation.in(dir).writeConfig(yaml);
        Installation.Result result = idem.run(TIMEOUT, "check");
        assertThat(result.exitCode()).as(result.toString()).isEqualTo(2);
        assertThat(result.err()).contains(expected);
    }

    @Test
    void checkNamesABadHandlerJar() throws IOException {
        Installation idem = Installation.in(dir);
        Files.writeString(idem.home.resolve("handlers/truncated.jar"), "PK not really a jar");
        Installation.Result result = idem.run(TIMEOUT, "check");
        assertThat(result.exitCode()).as(result.toString()).isEqualTo(2);
        assertThat(result.err()).contains("truncated.jar").contains("is not a readable JAR file")
                .contains("remove it from its folder");
    }
}
