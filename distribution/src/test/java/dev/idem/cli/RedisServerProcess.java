package dev.idem.cli;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;

/**
 * A {@code redis-server} of the test's own, on a free port of 127.0.0.1 with its data in a directory of the test.
 * By default {@code --save '' --appendonly no}, so it writes nothing by itself, stopped with {@code SHUTDOWN SAVE} so
 * that it writes its data once and a restart on the same directory has the keys back, as a maintained Redis would
 * after a planned restart. {@link #startDurable} runs it as a durable production Redis does
 * ({@code --appendonly yes --appendfsync always}), so that {@link #kill} ({@code kill -9}) loses no acknowledged
 * write. Not thread-safe.
 */
final class RedisServerProcess implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final LocalTool server;
    private final Path dir;
    private final boolean durable;
    final int port = Installation.freePort();
    private Process process;
    private int starts;

    private RedisServerProcess(LocalTool server, Path dir, boolean durable) {
        this.server = server;
        this.dir = dir;
        this.durable = durable;
    }

    /** Starts a server; the test is skipped (fails with {@code CI=true}) when {@code redis-server} is missing. */
    static RedisServerProcess start(Path dir) {
        return start(dir, false);
    }

    /** Starts a server that writes every change to its append-only file before it answers. */
    static RedisServerProcess startDurable(Path dir) {
        return start(dir, true);
    }

    private static RedisServerProcess start(Path dir, boolean durable) {
        LocalTool server = LocalTool.locate("redis-server", "IDEM_TEST_REDIS_SERVER",
                "Install it with: apt-get install redis-server");
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        RedisServerProcess redis = new RedisServerProcess(server, dir, durable);
        redis.start();
        return redis;
    }

    String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** Starts the server on its port and directory, and waits until it answers {@code PING}. */
    void start() {
        process = server.start(dir.resolve("redis-" + ++starts + ".log"), "--port", Integer.toString(port), "--bind",
                "127.0.0.1", "--save", "", "--appendonly", durable ? "yes" : "no", "--appendfsync",
                durable ? "always" : "everysec", "--dir", dir.toString(), "--protected-mode", "no");
        try {
            await().atMost(START_TIMEOUT).pollInterval(Duration.ofMillis(50))
                    .failFast("redis-server exited", () -> !process.isAlive()).until(this::answers);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError("redis-server on port " + port + " does not answer PING: " + e.getMessage()
                    + "\n" + log(), e);
        }
    }

    /** {@code SHUTDOWN SAVE}, then waits until the process has ended and the port is closed. */
    void stop() throws InterruptedException {
        try {
            command("SHUTDOWN", "SAVE");
        } catch (IOException e) {
            // The server closes the connection instead of answering a successful SHUTDOWN.
        }
        if (!process.waitFor(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("redis-server on port " + port + " did not stop within " + START_TIMEOUT + "\n"
                    + log());
        }
        if (answers()) {
            throw new AssertionError("redis-server on port " + port + " still answers after its process ended");
        }
    }

    /** {@code kill -9}: the process ends at once, writing nothing more; waits until the port is closed. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("redis-server on port " + port + " did not die within " + START_TIMEOUT);
        }
        await().atMost(START_TIMEOUT).pollInterval(Duration.ofMillis(20)).until(() -> !answers());
    }

    /** The number of keys ({@code DBSIZE}). */
    long keys() {
        try {
            String reply = command("DBSIZE");
            if (!reply.startsWith(":")) {
                throw new AssertionError("DBSIZE answered " + reply);
            }
            return Long.parseLong(reply.substring(1).trim());
        } catch (IOException e) {
            throw new UncheckedIOException("DBSIZE on port " + port, e);
        }
    }

    boolean answers() {
        try {
            return command("PING").startsWith("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    /** Sends one command in the Redis protocol and returns the first line of the reply. */
    private String command(String... args) throws IOException {
        StringBuilder request = new StringBuilder("*").append(args.length).append("\r\n");
        for (String arg : args) {
            request.append('$').append(arg.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(arg)
                    .append("\r\n");
        }
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            socket.setSoTimeout(5000);
            OutputStream out = socket.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder reply = new StringBuilder();
            for (int b = in.read(); b != -1 && b != '\n'; b = in.read()) {
                reply.append((char) b);
            }
            if (reply.isEmpty()) {
                throw new IOException("connection closed without a reply");
            }
            return reply.toString().strip();
        }
    }

    private String log() {
        try {
            return Files.readString(dir.resolve("redis-" + starts + ".log"));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroyForcibly().waitFor();
        }
    }
}
