package dev.idem.cli.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shipped {@code conf/logback.xml}: what reaches {@code logs/idem.log} from message-derived text. */
class SafeLoggingTest {

    private static final Pattern EVENT_START = Pattern.compile("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}.*");

    @TempDir
    Path home;

    @Test
    void aMessageCannotForgeALineOrRepaintTheTerminal() throws Exception {
        List<String> lines = logThrough("shipped", logger -> logger.info("Dead-lettered message {} ({})",
                "evil\n12:00:00.000 INFO  [main] d.i.r.IdemRuntime   - FORGED LINE", "a\rb\u001b[2Jc"));

        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).matches(EVENT_START).contains("Dead-lettered message evil");
        assertThat(lines.get(1)).startsWith("  12:00:00.000 INFO").contains("FORGED LINE")
                .endsWith("(a\\rb\\u001b[2Jc)");
    }

    @Test
    void credentialsInMessagesAndExceptionsAreMasked() throws Exception {
        IllegalStateException failure = new IllegalStateException("Cannot connect to amqp://idem:hunter2@mq:5672/\n"
                + "12:00:00.000 INFO  forged", new RuntimeException("jdbc:postgresql://db/app?user=a&password=hunter2"));
        List<String> lines = logThrough("shipped", logger ->
                logger.warn("Store redis://:hunter2@cache:6379 is down", failure));

        assertThat(String.join("\n", lines)).doesNotContain("hunter2")
                .contains("redis://:******@cache:6379", "amqp://idem:******@mq:5672/", "password=******");
        assertThat(lines.get(0)).matches(EVENT_START);
        assertThat(lines.subList(1, lines.size())).allSatisfy(line ->
                assertThat(line).satisfiesAnyOf(l -> assertThat(l).startsWith(" "), l -> assertThat(l).startsWith("\t"),
                        l -> assertThat(l).startsWith("Caused by: "), l -> assertThat(l).startsWith("java.lang.")));
        assertThat(lines).filteredOn(line -> line.contains("forged")).singleElement()
                .satisfies(line -> assertThat(line).startsWith("  12:00:00.000"));
    }

    @Test
    void ordinaryTextIsLeftAsItIs() {
        assertThat(SafeLogText.of("Consuming orders with 8 workers")).isEqualTo("Consuming orders with 8 workers");
        assertThat(SafeLogText.of("a\n\tat x\nCaused by: y\n  indented")).isEqualTo("a\n\tat x\nCaused by: y\n  indented");
        assertThat(SafeLogText.of("two\r\nlines")).isEqualTo("two\n  lines");
    }

    private List<String> logThrough(String name, Consumer<Logger> logging) throws Exception {
        LoggerContext context = new LoggerContext();
        context.setMDCAdapter(new LogbackMDCAdapter());
        context.putProperty("IDEM_HOME", home.toString());
        JoranConfigurator configurator = new JoranConfigurator();
        configurator.setContext(context);
        configurator.doConfigure(Path.of("src/main/dist/conf/logback.xml").toFile());
        try {
            logging.accept(context.getLogger("dev.idem.test." + name));
        } finally {
            context.stop();
        }
        return Files.readAllLines(home.resolve("logs/idem.log"), StandardCharsets.UTF_8);
    }
}
