package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.idem.api.HandlerContext;
import dev.idem.api.IdemException;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code bin/idem} called wrongly, in process: exit 2 with one line that says what was wrong and what is accepted,
 * never "Unexpected failure" with a stack trace; and {@code check} refuses what {@code run} would refuse.
 * The broker in these configurations is never reachable (port 1): every error here comes before it is contacted.
 */
class CliUsageErrorsTest {

    /** A handler with nothing to do, for configurations that must name one. */
    public static final class NoopHandler implements MessageHandler {
        @Override
        public void handle(Message message, HandlerContext context) {
        }
    }

    private static final String CONFIG = """
            broker: {type: activemq, activemq: {url: "tcp://127.0.0.1:1"}}
            store: {type: caffeine}
            runtime: {http: {port: 0}}
            pipelines:
              orders: {source: orders, handler: %s}
            """.formatted(NoopHandler.class.getName());

    private static final String TWO_SOURCES = CONFIG + "  refunds: {source: refunds, handler: "
            + NoopHandler.class.getName() + "}\n";

    @TempDir
    Path home;

    private String previousHome;

    @BeforeEach
    void home() {
        previousHome = System.getProperty("idem.home");
        System.setProperty("idem.home", home.toString());
    }

    @AfterEach
    void restoreHome() {
        if (previousHome == null) {
            System.clearProperty("idem.home");
        } else {
            System.setProperty("idem.home", previousHome);
        }
    }

    record Result(int exitCode, String out, String err) {
        /** One line on stderr, no stack trace, exit 2. */
        void isOneLineUsageError(String expected) {
            assertThat(exitCode).as(this.toString()).isEqualTo(Main.INVALID);
            assertThat(err.strip().lines()).as(err).hasSize(1);
            assertThat(err).contains(expected).doesNotContain("at dev.idem").doesNotContain("Unexpected failure");
        }
    }

    private Result idem(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    private String config(String yaml) throws IOException {
        Path file = Files.createTempFile(home, "idem", ".yaml");
        Files.writeString(file, yaml);
        return file.toString();
    }

    @Test
    void storeGetWithAKeyLongerThanAnyStoredOneIsAUsageError() throws IOException {
        idem("store", "get", "--config", config(CONFIG), "k".repeat(10_240))
                .isOneLineUsageError("The ID is 10,240 bytes of UTF-8, but a key is at most 512 bytes");
    }

    @Test
    void storeGetForAPipelineTheConfigurationDoesNotDeclareIsAUsageError() throws IOException {
        idem("store", "get", "--config", config(CONFIG), "--pipeline", "nosuch", "order-1")
                .isOneLineUsageError("No pipeline 'nosuch' in the configuration; configured: [orders]");
    }

    @Test
    void publishFromAMissingFileAFolderOrAFileThatIsNotUtf8IsAUsageError() throws IOException {
        String config = config(CONFIG);
        Path latin1 = home.resolve("latin1.txt");
        Files.write(latin1, "{\"city\":\"Z\u00fcrich\"}\n".getBytes(StandardCharsets.ISO_8859_1));

        idem("publish", "--config", config, "--file", home.resolve("missing.txt").toString())
                .isOneLineUsageError("--file " + home.resolve("missing.txt") + " does not exist");
        idem("publish", "--config", config, "--file", home.toString())
                .isOneLineUsageError("--file " + home + " is a folder; name a UTF-8 text file of payload templates");
        idem("publish", "--config", config, "--file", latin1.toString())
                .isOneLineUsageError("--file " + latin1 + " is not UTF-8 text");
    }

    /** Issue 24, item 12: {@code --file /dev/zero} died with OutOfMemoryError and a stack trace. */
    @Test
    void publishFromADeviceOrAFileLargerThanTheLimitIsAUsageErrorThatStatesTheLimit() throws IOException {
        String config = config(CONFIG);
        Path large = home.resolve("large.txt");
        try (RandomAccessFile file = new RandomAccessFile(large.toFile(), "rw")) {
            file.setLength(PublishCommand.MAX_FILE_BYTES + 1L);
        }

        idem("publish", "--config", config, "--file", "/dev/zero")
                .isOneLineUsageError("--file /dev/zero is not a regular file (a pipe, a socket or a device)");
        idem("publish", "--config", config, "--file", large.toString())
                .isOneLineUsageError("--file " + large + " is larger than 16 MiB, the most publish reads: the file is"
                        + " held in memory whole, one payload per line. Split it into smaller files");
    }

    /** Issue 24, item 14: a duration too long for the parser was called "not a positive duration". */
    @Test
    void purgeOlderThanMoreThanTheLongestDurationSaysItIsTooLongAndWhatTheMaximumIs() throws IOException {
        String config = config(CONFIG);
        idem("store", "purge", "--config", config, "--older-than", "1000000d")
                .isOneLineUsageError("--older-than 1000000d is too long: the longest accepted is 106751d (about 292"
                        + " years)");
        idem("store", "purge", "--config", config, "--older-than", "99999999999999999999d")
                .isOneLineUsageError("--older-than 99999999999999999999d is too long");
        idem("store", "purge", "--config", config, "--older-than", "soon")
                .isOneLineUsageError("--older-than must be a positive duration such as 30d, 12h or PT90M: soon");
    }

    @Test
    void publishWithoutDestinationWhenPipelinesConsumeSeveralSourcesIsAUsageError() throws IOException {
        idem("publish", "--config", config(TWO_SOURCES))
                .isOneLineUsageError("Say where to publish with --to DESTINATION; the configured pipelines consume"
                        + " [orders, refunds]");
    }

    @Test
    void publishWithNoThreadsIsRefusedWithTheAcceptedRange() throws IOException {
        idem("publish", "--config", config(CONFIG), "--threads", "0")
                .isOneLineUsageError("--threads must be from 1 to 256: 0");
    }

    @Test
    void publishWithABadCountOrPercentageIsAUsageError() throws IOException {
        idem("publish", "--config", config(CONFIG), "--duplicates", "101")
                .isOneLineUsageError("--duplicates must be a percentage from 0 to 100: 101");
        idem("publish", "--config", config(CONFIG), "--count", "many")
                .isOneLineUsageError("Invalid value for option '--count': 'many' is not an int (see 'idem publish --help')");
    }

    @Test
    void demoWithANegativeTimeoutIsRefusedBeforeAnythingIsPublished() throws IOException {
        idem("demo", "--config", config(CONFIG), "--timeout", "-1")
                .isOneLineUsageError("--timeout must be from 1 to 86400 seconds: -1");
    }

    @Test
    void aConfigurationThatIsAFolderOrAPipeIsNamedForWhatItIs() throws Exception {
        Result folder = idem("check", "--config", home.toString());
        assertThat(folder.exitCode()).isEqualTo(Main.INVALID);
        assertThat(folder.err()).contains("Configuration file " + home + " is a folder, not a file")
                .doesNotContain("does not exist");

        Path fifo = home.resolve("idem.fifo");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertThat(mkfifo.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(mkfifo.exitValue()).isZero();
        Result pipe = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> idem("check", "--config", fifo.toString()));
        assertThat(pipe.exitCode()).isEqualTo(Main.INVALID);
        assertThat(pipe.err()).contains("Configuration file " + fifo + " is not a regular file (a pipe, a socket or"
                + " a device)").doesNotContain("does not exist");
    }

    @Test
    void noCommandPrintsTheUsageOnStderrAndExitsWithTwo() {
        Result none = idem();

        assertThat(none.exitCode()).isEqualTo(Main.INVALID);
        assertThat(none.out()).isEmpty();
        assertThat(none.err()).startsWith("Missing command: name one of [run, check, plugins, publish, store, dlq, demo].")
                .contains("Usage: idem");
        assertThat(idem("store").exitCode()).isEqualTo(Main.INVALID);
        assertThat(idem("--help").exitCode()).isZero();
    }

    @Test
    void checkReportsEverythingRunWouldRefuseAtOnce() throws IOException {
        String yaml = CONFIG.replace("url: \"tcp://127.0.0.1:1\"", "url: \"tcp://127.0.0.1:1\", client: {sendTimout: 5}")
                .replace("handler: " + NoopHandler.class.getName() + "}", "handler: " + NoopHandler.class.getName()
                        + ", id: [{type: template, template: \"o-{/id\"}, {type: template, template: fixed}]}")
                .replace("runtime: {http: {port: 0}}", "runtime: {http: {host: \"not a host!\"}}");
        String config = config(yaml);

        for (String command : new String[] {"check", "run"}) {
            Result result = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> idem(command, "--config", config));
            assertThat(result.exitCode()).as(command + ": " + result).isEqualTo(Main.INVALID);
            assertThat(result.err()).as(command)
                    .contains("4 configuration problems:")
                    .contains("Unknown key broker.activemq.client.sendTimout")
                    .contains("Invalid value 'o-{/id' for pipelines.orders.id[0].template")
                    .contains("Invalid value 'fixed' for pipelines.orders.id[1].template")
                    .contains("Invalid value 'not a host!' for runtime.http.host");
        }
    }

    @Test
    void runTakesTheHealthPortBeforeContactingAnythingAndNamesItWhenItIsInUse() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String config = config(CONFIG.replace("runtime: {http: {port: 0}}",
                    "runtime: {http: {host: 127.0.0.1, port: " + taken.getLocalPort() + "}}"));

            Result result = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> idem("run", "--config", config));

            assertThat(result.exitCode()).as(result.toString()).isEqualTo(Main.FAILED);
            assertThat(result.err()).as("the port is the first thing run takes: the unreachable broker is never tried")
                    .startsWith("Cannot serve health and metrics on 127.0.0.1:" + taken.getLocalPort())
                    .doesNotContain("Cannot connect to ActiveMQ");
        }
    }

    @Test
    void runThatCannotReachTheBrokerGivesTheHealthPortBack() throws IOException {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        String config = config(CONFIG.replace("runtime: {http: {port: 0}}",
                "runtime: {http: {host: 127.0.0.1, port: " + port + "}}"));

        Result result = assertTimeoutPreemptively(Duration.ofSeconds(90), () -> idem("run", "--config", config));

        assertThat(result.exitCode()).as(result.toString()).isEqualTo(Main.FAILED);
        assertThat(result.err()).contains("tcp://127.0.0.1:1");
        try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            assertThat(again.getLocalPort()).as("the port bound before connecting was closed").isEqualTo(port);
        }
    }

    @Test
    void errorsPrintedOnTheTerminalMaskCredentials() {
        StringWriter err = new StringWriter();
        CommandLine command = Main.commandLine();
        command.setErr(new PrintWriter(err));

        int failed = Main.report(new IdemException("Cannot reach amqp://idem:hunter2@mq:5672/",
                new IllegalStateException("jdbc:postgresql://db/app?password=hunter2")), command);
        int unexpected = Main.report(new IllegalStateException("redis://:hunter2@cache:6379 refused"), command);

        assertThat(failed).isEqualTo(Main.FAILED);
        assertThat(unexpected).isEqualTo(Main.FAILED);
        assertThat(err.toString()).doesNotContain("hunter2")
                .contains("amqp://idem:******@mq:5672/", "password=******", "redis://:******@cache:6379");
    }
}
