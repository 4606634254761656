package dev.idem.store.redis;

import dev.idem.testkit.ExternalService;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A {@code redis-server} of a test's own, on a port of its own, keeping nothing on disk: for tests that stop
 * and start Redis or need a server set up differently from the shared one. Stopped by {@link #close()}.
 */
final class RedisServerProcess implements AutoCloseable {

    private final Path binary;
    private final int port;
    private final Path dir;
    private final List<String> extraArgs;
    private Process process;

    RedisServerProcess(Path binary, int port, Path dir, String... extraArgs) {
        this.binary = binary;
        this.port = port;
        this.dir = dir;
        this.extraArgs = List.of(extraArgs);
    }

    /**
     * The path of a Redis binary ({@code redis-server}, {@code redis-cli}) on {@code PATH}. Without it the
     * calling test is skipped, saying so, or fails under {@code CI=true}.
     */
    static Path requireBinary(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        String problem = name + " is not on PATH, so this test cannot start a Redis of its own. Install Redis "
                + "(e.g. apt-get install redis-server).";
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new AssertionError(problem + " CI=true requires it, so this fails instead of skipping.");
        }
        System.err.println("[idem-store-redis] NOT RUN: " + problem);
        Assumptions.abort("NOT RUN: " + problem);
        throw new IllegalStateException("unreachable");
    }

    /** A port that is free now, and whose cluster bus port (+10000) is free too. */
    static int freePort() {
        for (int tries = 0; tries < 100; tries++) {
            int port = ThreadLocalRandom.current().nextInt(20_000, 30_000);
            if (free(port) && free(port + 10_000)) {
                return port;
            }
        }
        throw new IllegalStateException("No free port pair found in 20000-39999");
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket(port)) {
            socket.setReuseAddress(true);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    int port() {
        return port;
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** Starts the server and waits until it accepts connections. */
    void start() throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(binary.toString(), "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", dir.toString()));
        command.addAll(extraArgs);
        process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis-" + port + ".log").toFile()))
                .start();
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!ExternalService.reachable(url())) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server on port " + port + " did not start; see "
                        + dir.resolve("redis-" + port + ".log") + ":\n"
                        + Files.readString(dir.resolve("redis-" + port + ".log")));
            }
            Thread.sleep(20);
        }
    }

    /** Stops the server and waits until it is gone. */
    void stop() throws InterruptedException {
        if (process == null) {
            return;
        }
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        process = null;
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
