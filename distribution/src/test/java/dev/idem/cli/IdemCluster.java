package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.cli.fault.FaultHandler;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;

/**
 * {@code bin/idem run} processes of one configuration, as the fault ITs run them: each node is its own installation
 * (its own {@code conf/}, HTTP port and logs) with {@link FaultHandler} (or another test handler) in
 * {@code handlers/}, and all write their runs to one directory. The test kills and restarts nodes; a node that exits
 * without being killed fails the wait that notices it, with its log. Not thread-safe: one test thread drives it.
 */
final class IdemCluster implements AutoCloseable {

    /** One {@code bin/idem run} slot: an installation and its current process. */
    final class Node {
        final int number;
        final Installation idem;
        final int port = Installation.freePort();
        Installation.Running current;
        int kills;

        private Node(int number, Installation idem) {
            this.number = number;
            this.idem = idem;
        }

        void start() {
            current = idem.start("run");
        }

        /** {@code kill -9}, then a new process at once, as a supervisor restarts a crashed service. */
        void killAndRestart() throws InterruptedException {
            assertAlive();
            current.kill();
            kills++;
            start();
        }

        long processed() {
            return outcome("processed");
        }

        /** The current process's count of {@code outcome} ({@code idem_messages_total}); 0 while not serving. */
        long outcome(String outcome) {
            return current.outcomes(port).getOrDefault(outcome, 0L);
        }

        boolean serving() {
            return current.outcomes(port).containsKey("processed");
        }

        void assertAlive() {
            if (!current.process.isAlive()) {
                throw new AssertionError("node " + number + " (bin/idem run, pid " + current.process.pid()
                        + ") exited by itself with " + current.process.exitValue() + "\n" + tail(current.log()));
            }
        }

        @Override
        public String toString() {
            return "node " + number + " (pid " + current.process.pid() + ", port " + port + ", killed " + kills + "x)";
        }
    }

    final Path runsDir;
    final List<Node> nodes = new ArrayList<>();

    /**
     * @param config the configuration of a node, given its HTTP port
     * @param env extra environment of every node ({@link FaultHandler}'s settings besides the runs directory)
     */
    IdemCluster(Path dir, int size, IntFunction<String> config, Map<String, String> env) {
        this(dir, size, config, withRunsDir(dir, env), FaultHandler.class, "fault-handler.jar");
    }

    /**
     * Nodes with {@code handler}'s package in {@code handlers/<jarName>} instead of {@link FaultHandler}'s.
     *
     * @param env the whole extra environment of every node (the handler's settings)
     */
    IdemCluster(Path dir, int size, IntFunction<String> config, Map<String, String> env, Class<?> handler,
            String jarName) {
        runsDir = dir.resolve("runs");
        for (int n = 1; n <= size; n++) {
            Installation idem = Installation.in(dir.resolve("node-" + n));
            Node node = new Node(n, idem);
            idem.writeConfig(config.apply(node.port));
            idem.env.putAll(env);
            HandlerJar.install(idem, handler, jarName);
            nodes.add(node);
        }
    }

    private static Map<String, String> withRunsDir(Path dir, Map<String, String> env) {
        Map<String, String> all = new HashMap<>(env);
        all.put(FaultHandler.RUNS_DIR_ENV, dir.resolve("runs").toString());
        return all;
    }

    Node node(int number) {
        return nodes.get(number - 1);
    }

    /** Starts every node and waits until each serves its metrics, i.e. its pipeline runs. */
    void startAndAwaitServing(Duration timeout) {
        nodes.forEach(Node::start);
        awaitUntil(() -> nodes.stream().allMatch(Node::serving), () -> "every node to serve /metrics", timeout);
    }

    long processed() {
        return nodes.stream().mapToLong(Node::processed).sum();
    }

    /** The current processes' counts of {@code outcome}, summed; a killed process's counts are gone. */
    long outcome(String outcome) {
        return nodes.stream().mapToLong(n -> n.outcome(outcome)).sum();
    }

    int kills() {
        return nodes.stream().mapToInt(n -> n.kills).sum();
    }

    /** Polls {@code condition} until it holds; fails early, with the node's log, if a node exits by itself. */
    void awaitUntil(Callable<Boolean> condition, Supplier<String> what, Duration timeout) {
        try {
            await().atMost(timeout).pollInterval(Duration.ofMillis(200)).pollInSameThread()
                    .failFast("a node exited by itself", () -> nodes.stream().anyMatch(n -> !n.current.process.isAlive()))
                    .until(condition);
        } catch (TerminalFailureException e) {
            nodes.forEach(Node::assertAlive);
            throw e;
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("Waiting for " + what.get() + ": " + e.getMessage() + "\n" + logs(), e);
        }
    }

    /**
     * Lets a fault last {@code duration} (a store or broker kept down), calling {@code watch} about every 200 ms;
     * fails early if a node exits by itself.
     */
    void hold(Duration duration, Runnable watch) {
        long start = System.nanoTime();
        awaitUntil(() -> {
            watch.run();
            return System.nanoTime() - start >= duration.toNanos();
        }, () -> "the end of a " + duration.toMillis() + " ms fault", duration.plusMinutes(1));
    }

    /**
     * Waits until {@code state} (and every node's outcome counters) stayed unchanged for {@code quiet}: every message,
     * duplicates and deferred keys too, is settled.
     */
    void awaitQuiet(Duration quiet, Supplier<Object> state, Duration timeout) {
        AtomicReference<Object> seen = new AtomicReference<>();
        AtomicLong changedAt = new AtomicLong(System.nanoTime());
        awaitUntil(() -> {
            List<Object> now = new ArrayList<>();
            now.add(state.get());
            nodes.forEach(n -> now.add(n.current.outcomes(n.port)));
            if (!now.equals(seen.getAndSet(now))) {
                changedAt.set(System.nanoTime());
            }
            return System.nanoTime() - changedAt.get() >= quiet.toNanos();
        }, () -> "the history and the outcome counters to stay unchanged for " + quiet.toSeconds() + "s", timeout);
    }

    /** SIGTERM to every node; each must end its graceful stop with 128+15. */
    void terminateAll() throws InterruptedException {
        for (Node node : nodes) {
            node.current.process.destroy();
        }
        for (Node node : nodes) {
            int exit = node.current.terminate(Duration.ofSeconds(60));
            assertThat(exit).as("node %d: SIGTERM ends a graceful stop with 128+15\n%s", node.number,
                    tail(node.current.log())).isEqualTo(143);
            assertThat(node.current.log()).as("node %d's log", node.number).contains("Stopped;");
        }
    }

    /** The last lines of each node's current log. */
    String logs() {
        StringBuilder out = new StringBuilder();
        for (Node node : nodes) {
            out.append("--- ").append(node).append('\n').append(tail(node.current.log())).append('\n');
        }
        return out.toString();
    }

    /** Kills what still runs: the cleanup after a failure. */
    @Override
    public void close() throws InterruptedException {
        for (Node node : nodes) {
            if (node.current != null && node.current.process.isAlive()) {
                node.current.kill();
            }
        }
    }

    static String tail(String log) {
        String[] lines = log.split("\n");
        return String.join("\n", Arrays.asList(lines).subList(Math.max(0, lines.length - 40), lines.length));
    }

    static long secondsSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNanos);
    }
}
