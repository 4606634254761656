package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.cli.exit.ExitingHandler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 24, item 3: a handler that calls {@code System.exit(0)} under {@code bin/idem}. {@code run} stops gracefully,
 * exits 1 (not the handler's 0) after an error naming the caller, and the message it was handling is not lost;
 * {@code check} exits 2 with the same line when a constructor does it. On the embedded ActiveMQ broker: publish,
 * then run, as the embedded broker lives in the process that has it.
 */
class HandlerExitIT {

    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    @TempDir
    Path dir;

    private Installation installation() {
        Installation idem = Installation.in(dir).writeConfig("""
                broker:
                  type: activemq
                  activemq:
                    embedded: { enabled: true, data-directory: "${IDEM_HOME}/data/activemq" }
                store: { type: caffeine }
                runtime:
                  shutdown-timeout: 1s
                  http: { enabled: false }
                pipelines:
                  orders:
                    source: orders
                    handler: %s
                """.formatted(ExitingHandler.class.getName()));
        HandlerJar.install(idem, ExitingHandler.class, "exiting-handler.jar");
        return idem;
    }

    @Test
    void aHandlerThatCallsSystemExitEndsRunWithOneAfterAGracefulStopNamingItAndTheMessageStays() throws Exception {
        Installation idem = installation();
        Path record = idem.home.resolve("data/handled.txt");
        idem.env.put(ExitingHandler.RECORD_ENV, record.toString());
        Installation.Result published = idem.run(TIMEOUT, "publish", "--id", "exit-1");
        assertThat(published.exitCode()).as(published.toString()).isZero();

        idem.env.put(ExitingHandler.EXIT_IN_ENV, "handle");
        Installation.Result run = idem.run(TIMEOUT, "run");

        assertThat(run.exitCode()).as(run.toString()).isEqualTo(Main.FAILED);
        assertThat(run.err()).as(run.toString())
                .contains(ExitingHandler.class.getName() + ".handle(ExitingHandler.java:")
                .contains("called System.exit on thread 'idem-orders-")
                .contains("idem did not ask to end the process")
                .contains("Stopping gracefully, then exiting with status 1")
                .contains("Stopped;");

        idem.env.remove(ExitingHandler.EXIT_IN_ENV);
        Installation.Running again = idem.start("run");
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(record)
                    && Files.readString(record).contains("exit-1"));
        } finally {
            assertThat(again.terminate(Duration.ofSeconds(60))).as(again.log()).isEqualTo(143);
        }
        assertThat(again.log()).as("a SIGTERM is idem's own stop").doesNotContain("called System.exit");
    }

    @Test
    void aHandlerConstructorThatCallsSystemExitFailsCheckWithTwoAndSaysWhy() {
        Installation idem = installation();
        idem.env.put(ExitingHandler.EXIT_IN_ENV, "constructor");

        Installation.Result check = idem.run(TIMEOUT, "check");

        assertThat(check.exitCode()).as(check.toString()).isEqualTo(Main.INVALID);
        assertThat(check.err()).as(check.toString())
                .contains(ExitingHandler.class.getName() + ".<init>(ExitingHandler.java:")
                .contains("called System.exit on thread 'idem-handler-create-orders'")
                .contains("Exiting with status 2");
    }
}
