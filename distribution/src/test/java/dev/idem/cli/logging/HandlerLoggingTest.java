package dev.idem.cli.logging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.util.ContextInitializer;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * A handler's {@code context.logger()} lines under the shipped {@code conf/logback.xml}: they reach
 * {@code logs/idem.log} with the pipeline and the message's key, and a line break in them cannot forge a line.
 */
class HandlerLoggingTest {

    private static final Pattern EVENT_START = Pattern.compile("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}.*");

    @TempDir
    Path home;

    private final LoggerContext logging = (LoggerContext) LoggerFactory.getILoggerFactory();

    @AfterEach
    void restoreTheTestLogging() throws Exception {
        logging.reset();
        new ContextInitializer(logging).autoConfig();
    }

    @Test
    void aHandlersLinesReachTheLogFileWithPipelineAndKeyAndCannotForgeALine() throws Exception {
        logging.reset();
        logging.putProperty("IDEM_HOME", home.toString());
        JoranConfigurator configurator = new JoranConfigurator();
        configurator.setContext(logging);
        configurator.doConfigure(Path.of("src/main/dist/conf/logback.xml").toFile());

        InMemoryBroker broker = new InMemoryBroker();
        CountDownLatch handled = new CountDownLatch(1);
        try (IdemRuntime runtime = Idem.builder()
                .configYaml("""
                        broker:
                          type: memory
                        store:
                          type: caffeine
                        pipelines:
                          orders:
                            source: orders
                        """)
                .env(Map.of())
                .broker("memory", broker.connect())
                .handler("orders", (message, context) -> {
                    context.logger().log(System.Logger.Level.INFO, "charged {0}\n12:00:00.000 INFO  [main]"
                            + " d.i.r.IdemRuntime - FORGED \u001b[2J", message.idempotencyKey().orElseThrow());
                    handled.countDown();
                })
                .start()) {
            broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", "pay-1"),
                    "12.50".getBytes(StandardCharsets.UTF_8)));
            assertThat(handled.await(20, TimeUnit.SECONDS)).isTrue();
            await().atMost(Duration.ofSeconds(20)).until(() -> broker.depth("orders") == 0
                    && broker.unsettled("orders") == 0);
        }
        logging.stop();

        List<String> lines = Files.readAllLines(home.resolve("logs/idem.log"), StandardCharsets.UTF_8);
        int at = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("charged pay-1")) {
                at = i;
            }
        }
        assertThat(at).as("the handler's line in logs/idem.log:\n%s", String.join("\n", lines)).isNotNegative();
        assertThat(lines.get(at)).matches(EVENT_START).contains(" INFO ", "idem.handler.orders")
                .endsWith(" orders pay-1 - charged pay-1");
        assertThat(lines.get(at + 1)).as("the forged line is a continuation, and ESC is escaped")
                .startsWith("  12:00:00.000 INFO  [main]").endsWith("FORGED \\u001b[2J");
    }
}
