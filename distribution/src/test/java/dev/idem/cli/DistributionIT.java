package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
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
