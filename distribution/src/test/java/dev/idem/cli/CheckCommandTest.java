package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code idem check}, in process, on handlers that cannot be created: what it says about each. */
class CheckCommandTest {

    /** A handler whose static initializer throws: it reads a setting that is not there. */
    public static final class BrokenInitHandler implements MessageHandler {
        static final String URL = requiredUrl();

        private static String requiredUrl() {
            String url = System.getProperty("idem.test.orders-url");
            if (url == null) {
                throw new IllegalStateException("orders-url is not set");
            }
            return url;
        }

        @Override
        public void handle(Message message, HandlerContext context) {
        }
    }

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

    /** A handler with nothing to do. */
    public static final class NoopHandler implements MessageHandler {
        @Override
        public void handle(Message message, HandlerContext context) {
        }
    }

    @Test
    void aKeyDigestIsShownWithAWarningThatItMustNotChange() throws IOException {
        Path config = home.resolve("idem.yaml");
        Files.writeString(config, """
                broker: {type: activemq, activemq: {url: "tcp://127.0.0.1:1"}}
                store: {type: caffeine, key-digest: sha256-128}
                runtime: {http: {port: 0}}
                pipelines:
                  orders: {source: orders, handler: %s}
                """.formatted(NoopHandler.class.getName()));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));

        int exit = cli.execute("check", "--config", config.toString());

        assertThat(exit).as(err.toString()).isZero();
        assertThat(out.toString())
                .contains("keeps a digest of each key (store.key-digest: sha256-128)")
                .contains("Warning: store.key-digest must stay what it was when the store first held keys.")
                .contains("  key-digest: sha256-128\n");
    }

    /** Issue 24, item 11: check said only "ExceptionInInitializerError". */
    @Test
    void aHandlerWhoseStaticInitializerThrowsIsReportedWithWhatItThrewAndWhere() throws IOException {
        Path config = home.resolve("idem.yaml");
        Files.writeString(config, """
                broker: {type: activemq, activemq: {url: "tcp://127.0.0.1:1"}}
                store: {type: caffeine}
                pipelines:
                  orders: {source: orders, handler: %1$s}
                  refunds: {source: refunds, handler: %1$s}
                """.formatted(BrokenInitHandler.class.getName()));
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(new StringWriter(), true));
        cli.setErr(new PrintWriter(err, true));

        int exit = cli.execute("check", "--config", config.toString());

        assertThat(exit).as(err.toString()).isEqualTo(Main.INVALID);
        assertThat(err.toString()).as("the first pipeline's handler: the cause, its message and where it came from")
                .contains("Handler class '" + BrokenInitHandler.class.getName() + "' (pipelines.orders.handler")
                .contains("could not be created: a static initializer threw java.lang.IllegalStateException:"
                        + " orders-url is not set, at " + BrokenInitHandler.class.getName()
                        + ".requiredUrl(CheckCommandTest.java:");
        assertThat(err.toString()).as("the second: the class stays uninitialised, and it says so")
                .contains("(pipelines.refunds.handler")
                .contains("Could not initialize class " + BrokenInitHandler.class.getName()
                        + " (its static initializer failed before: see the first problem with it)");
    }
}
