package dev.idem.cli;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A command-line tool a fault IT runs itself ({@code redis-server}, {@code rabbitmqctl}): the path named by an
 * environment variable, else the tool's name on the {@code PATH}. A missing tool skips the test with what to do, as
 * {@link dev.idem.testkit.ExternalService} does for a missing server; with {@code CI=true} it fails instead, so a CI
 * run never passes by skipping.
 */
final class LocalTool {

    /** What a finished command printed. */
    record Output(int exitCode, String text) {
    }

    final String path;

    private LocalTool(String path) {
        this.path = path;
    }

    static LocalTool locate(String name, String envVariable, String howToInstall) {
        String configured = System.getenv(envVariable);
        String wanted = configured != null && !configured.isBlank() ? configured : name;
        Optional<Path> found = wanted.contains(File.separator) ? Optional.of(Path.of(wanted)).filter(Files::isExecutable)
                : onPath(wanted);
        if (found.isPresent()) {
            return new LocalTool(found.get().toString());
        }
        String problem = name + " was not found (looked for '" + wanted + "'" + (wanted.contains(File.separator) ? ""
                : " on the PATH") + "; set " + envVariable + " to its path). " + howToInstall;
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new AssertionError(problem + " CI=true requires every service, so this fails instead of skipping.");
        }
        System.err.println("[idem-testkit] NOT RUN: " + problem);
        Assumptions.abort("NOT RUN: " + problem);
        throw new IllegalStateException("unreachable");
    }

    private static Optional<Path> onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir).resolve(name);
            if (Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** Starts the tool with {@code args}, its output (both streams) to {@code log}. */
    Process start(Path log, String... args) {
        try {
            return new ProcessBuilder(command(args)).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException("Starting " + path, e);
        }
    }

    /** Runs the tool to its end; fails when it does not end within {@code timeout}. */
    Output run(Duration timeout, String... args) {
        try {
            Path out = Files.createTempFile("idem-tool-", ".out");
            try {
                Process process = start(out, args);
                if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly().waitFor();
                    throw new AssertionError(String.join(" ", command(args)) + " did not end within " + timeout
                            + "\n" + Files.readString(out, StandardCharsets.UTF_8));
                }
                return new Output(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Runs the tool and fails, with its output, unless it exits with 0. */
    String check(Duration timeout, String... args) {
        Output output = run(timeout, args);
        if (output.exitCode() != 0) {
            throw new AssertionError(String.join(" ", command(args)) + " exited with " + output.exitCode() + "\n"
                    + output.text());
        }
        return output.text();
    }

    private List<String> command(String... args) {
        List<String> command = new ArrayList<>();
        command.add(path);
        command.addAll(List.of(args));
        return command;
    }
}
