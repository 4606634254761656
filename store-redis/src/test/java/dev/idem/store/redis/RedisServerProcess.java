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
 * and start Redis or need a server set up differently from the shared one; also a Sentinel ({@link #sentinel}).
 * Stopped by {@link #close()}.
 */
final class RedisServerProcess implements AutoCloseable {

    private final Path binary;
    private final int port;
    private final Path dir;
    private final Path configFile;
    private final List<String> extraArgs;
    private Process process;

    RedisServerProcess(Path binary, int port, Path dir, String... extraArgs) {
        this(binary, port, dir, null, extraArgs);
    }

    private RedisServerProcess(Path binary, int port, Path dir, Path configFile, String... extraArgs) {
        this.binary = binary;
        this.port = port;
        this.dir = dir;
        this.configFile = configFile;
        this.extraArgs = List.of(extraArgs);
    }

    /** A primary for replicas: it sends a replica its first copy at once, not after the default 5 s pause. */
    static RedisServerProcess primary(Path binary, int port, Path dir) {
        return new RedisServerProcess(binary, port, dir, "--repl-diskless-sync-delay", "0");
    }

    /** A replica of the server on {@code primaryPort}; promoted, it serves its own replicas as {@link #primary} does. */
    static RedisServerProcess replicaOf(Path binary, int port, Path dir, int primaryPort) {
        return new RedisServerProcess(binary, port, dir, "--replicaof", "127.0.0.1", Integer.toString(primaryPort),
                "--repl-diskless-sync-delay", "0");
    }

    /**
     * A Sentinel (Debian's {@code redis-server} in Sentinel mode, {@code redis-server <file> --sentinel}) watching the
     * primary on {@code primaryPort} as {@code master}, alone (quorum 1): it takes that primary for down after
     * {@code downAfter} without an answer and fails it over to a replica. It writes its state into its file in
     * {@code dir}.
     */
    static RedisServerProcess sentinel(Path binary, int port, Path dir, String master, int primaryPort,
            Duration downAfter, Duration failoverTimeout) throws IOException {
        Path file = dir.resolve("sentinel-" + port + ".conf");
        Files.writeString(file, "sentinel monitor " + master + " 127.0.0.1 " + primaryPort + " 1\n"
                + "sentinel down-after-milliseconds " + master + " " + downAfter.toMillis() + "\n"
                + "sentinel failover-timeout " + master + " " + failoverTimeout.toMillis() + "\n");
        return new RedisServerProcess(binary, port, dir, file, "--sentinel");
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
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        if (configFile != null) {
            command.add(configFile.toString());
        }
        command.addAll(List.of("--port", Integer.toString(port),
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

    /** Kills the server with SIGKILL, as a crash or a lost machine would stop it, and waits until it is gone. */
    void kill() throws InterruptedException {
        if (process == null) {
            return;
        }
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        process = null;
    }

    /** Sends the server a signal ({@code STOP}, {@code CONT}) and waits until it was sent. */
    void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
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
