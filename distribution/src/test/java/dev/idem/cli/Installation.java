package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A private copy of the built distribution ({@code target/idem-<version>/}) for one test: its own
 * {@code conf/}, {@code handlers/}, {@code data/} and {@code logs/}, with {@code lib/} and
 * {@code plugins/} linked to the build. Runs {@code bin/idem} as a separate OS process, as a user does.
 */
final class Installation {

    /** What a finished {@code bin/idem} printed. */
    record Result(int exitCode, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
        }
    }

    /** The {@code JAVA_OPTS} of every {@code bin/idem} run, unless {@link #env} gives others. */
    static final String JAVA_OPTS = "-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1";

    final Path home;
    final Map<String, String> env = new HashMap<>();
    private int runs;

    private Installation(Path home) {
        this.home = home;
    }

    static Path built() {
        String property = System.getProperty("idem.distribution");
        assertThat(property).as("system property idem.distribution (set by failsafe)").isNotNull();
        Path dir = Path.of(property);
        assertThat(dir.resolve("bin/idem")).as("the built distribution; run mvn package first").isExecutable();
        return dir;
    }

    /** A fresh installation under {@code dir}. */
    static Installation in(Path dir) {
        Path source = built();
        try {
            Path home = Files.createDirectories(dir.resolve("idem"));
            Files.createDirectories(home.resolve("bin"));
            Files.copy(source.resolve("bin/idem"), home.resolve("bin/idem"), StandardCopyOption.COPY_ATTRIBUTES);
            Files.createSymbolicLink(home.resolve("lib"), source.resolve("lib"));
            Files.createSymbolicLink(home.resolve("plugins"), source.resolve("plugins"));
            copyTree(source.resolve("conf"), home.resolve("conf"));
            copyTree(source.resolve("handlers"), home.resolve("handlers"));
            Files.createDirectories(home.resolve("data"));
            Files.createDirectories(home.resolve("logs"));
            return new Installation(home);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(f).toString());
                if (Files.isDirectory(f)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(f, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    Path config() {
        return home.resolve("conf/idem.yaml");
    }

    Installation writeConfig(String yaml) {
        try {
            Files.writeString(config(), yaml, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    private ProcessBuilder command(List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(home.resolve("bin/idem").toString());
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command).directory(home.toFile());
        pb.environment().remove("IDEM_HOME");
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("JAVA_OPTS", JAVA_OPTS);
        pb.environment().putAll(env);
        return pb;
    }

    /** Runs {@code bin/idem args} to its end. */
    Result run(Duration timeout, String... args) {
        try {
            int n = ++runs;
            Path out = home.resolve("logs/run-" + n + ".out");
            Path err = home.resolve("logs/run-" + n + ".err");
            Process process = command(List.of(args)).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError("bin/idem " + String.join(" ", args) + " did not end within " + timeout
                        + "\n--- stderr\n" + Files.readString(err));
            }
            return new Result(process.exitValue(), Files.readString(out), Files.readString(err));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Starts {@code bin/idem args} in the background, output to {@code logs/}. */
    Running start(String... args) {
        try {
            int n = ++runs;
            Path log = home.resolve("logs/run-" + n + ".log");
            Process process = command(List.of(args)).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            return new Running(process, log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A {@code bin/idem} process still running. */
    static final class Running {
        private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        private static final Pattern OUTCOME =
                Pattern.compile("^idem_messages_total\\{[^}]*outcome=\"([a-z-]+)\"[^}]*} ([0-9.eE+]+)$", Pattern.MULTILINE);

        final Process process;
        final Path log;

        Running(Process process, Path log) {
            this.process = process;
            this.log = log;
        }

        String log() {
            try {
                return Files.readString(log);
            } catch (IOException e) {
                return "(no log: " + e + ")";
            }
        }

        /** The {@code idem.messages} counters by outcome, read from {@code /metrics}; empty while not serving. */
        Map<String, Long> outcomes(int port) {
            Map<String, Long> counts = new HashMap<>();
            try {
                HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/metrics")).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.ofString());
                Matcher m = OUTCOME.matcher(response.body());
                while (m.find()) {
                    counts.merge(m.group(1), (long) Double.parseDouble(m.group(2)), Long::sum);
                }
            } catch (IOException e) {
                return counts;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return counts;
        }

        /** The sum of every {@code /metrics} sample named {@code series} (any labels); 0 when there is none. */
        double metric(int port, String series) throws IOException, InterruptedException {
            HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/metrics")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            double sum = 0;
            for (String line : response.body().split("\n")) {
                if (line.startsWith(series + " ") || line.startsWith(series + "{")) {
                    sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return sum;
        }

        /** SIGTERM, then its exit code once the graceful stop ended. */
        int terminate(Duration timeout) throws InterruptedException {
            process.destroy();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError("bin/idem did not stop within " + timeout + " of SIGTERM\n" + log());
            }
            return process.exitValue();
        }

        /** SIGKILL: {@code bin/idem} execs Java, so this is the JVM itself dying without a chance to clean up. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor();
        }
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
