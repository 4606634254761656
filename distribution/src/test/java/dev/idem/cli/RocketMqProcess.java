package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A RocketMQ name server and broker for the fault ITs, in a JVM of its own: adapter-rocketmq's
 * {@code EmbeddedRocketMq.main}, on that module's test class path (written to
 * {@code adapter-rocketmq/target/embedded-rocketmq.classpath} by its build, named by the system property
 * {@code idem.rocketmq.classpath}). Not in this JVM, whose Netty 4.2 RocketMQ 5.3 does not run on. It needs nothing
 * outside the build. One per test JVM ({@link #shared()}), killed when the JVM exits; through its standard input
 * topics are created and deleted, messages published and read back, and a group's backlog counted. Thread-safe.
 */
final class RocketMqProcess {

    private static RocketMqProcess shared;

    private final Process process;
    private final BufferedReader out;
    private final PrintStream in;
    private final String nameServer;

    private RocketMqProcess(Process process) throws IOException {
        this.process = process;
        this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.in = new PrintStream(new BufferedOutputStream(process.getOutputStream(), 1 << 16), false,
                StandardCharsets.UTF_8);
        String first = out.readLine();
        assertThat(first).as("the embedded RocketMQ's first line (its log: %s)", log()).startsWith("name-server ");
        this.nameServer = first.substring("name-server ".length());
    }

    /** The name server and broker of this test JVM, started on first call. */
    static synchronized RocketMqProcess shared() {
        if (shared == null) {
            shared = start();
            Runtime.getRuntime().addShutdownHook(new Thread(shared.process::destroyForcibly, "rocketmq-process-kill"));
        }
        return shared;
    }

    private static RocketMqProcess start() {
        String property = System.getProperty("idem.rocketmq.classpath");
        assertThat(property).as("system property idem.rocketmq.classpath (set by failsafe)").isNotNull();
        Path file = Path.of(property);
        assertThat(file).as("adapter-rocketmq's test class path; build adapter-rocketmq (package) first").exists();
        try {
            Path target = file.getParent();
            String classpath = target.resolve("test-classes") + ":" + target.resolve("classes") + ":"
                    + Files.readString(file).trim();
            Process process = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString(), "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath,
                    "dev.idem.adapter.rocketmq.EmbeddedRocketMq"))
                    .redirectError(logFile().toFile()).start();
            return new RocketMqProcess(process);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path logFile() {
        return Path.of(System.getProperty("java.io.tmpdir"), "idem-embedded-rocketmq-" + ProcessHandle.current().pid()
                + ".log");
    }

    private static String log() {
        try {
            return Files.exists(logFile()) ? Files.readString(logFile()) : "(none)";
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** {@code 127.0.0.1:port}, for {@code broker.rocketmq.name-server}. */
    String nameServer() {
        return nameServer;
    }

    /** Creates a topic of {@code queues} queues, routed at once. */
    void createTopic(String topic, int queues) {
        command("create-topic " + topic + " " + queues);
    }

    /** Deletes a topic and its messages, if it exists. */
    void deleteTopic(String topic) {
        command("delete-topic " + topic);
    }

    /** A message to publish ({@code key} {@code null} for none) or read back. */
    record Message(String key, byte[] payload, Map<String, String> properties) {
    }

    /**
     * Publishes {@code messages} to {@code topic} (which exists) in list order and returns once the broker stored every
     * one: a message with a key as its {@code KEYS}, to the queue the key's hash picks, so one key's messages stay in
     * order; its properties as user properties.
     */
    void publish(String topic, List<Message> messages) {
        List<String> lines = new ArrayList<>(messages.size());
        for (Message m : messages) {
            StringBuilder line = new StringBuilder(m.key() == null ? "-" : text(m.key())).append(' ')
                    .append(BASE64.encodeToString(m.payload()));
            m.properties().forEach((name, value) -> line.append(' ').append(text(name)).append(':')
                    .append(text(value)));
            lines.add(line.toString());
        }
        request("publish " + topic + " " + messages.size(), lines);
    }

    /**
     * Every message {@code topic} holds (none if it does not exist), read from the broker's store, so that no group
     * moves: queue after queue, in offset order, each with all its properties ({@code KEYS}, {@code UNIQ_KEY} and the
     * broker's included).
     */
    List<Message> messages(String topic) {
        List<Message> messages = new ArrayList<>();
        for (String line : request("messages " + topic, List.of()).lines()) {
            String[] parts = line.split(" ");
            Map<String, String> properties = new LinkedHashMap<>();
            for (int i = 2; i < parts.length; i++) {
                int colon = parts[i].indexOf(':');
                properties.put(untext(parts[i].substring(0, colon)), untext(parts[i].substring(colon + 1)));
            }
            messages.add(new Message(properties.get("KEYS"), UNBASE64.decode(parts[1]), properties));
        }
        return messages;
    }

    /** The messages of {@code topic} after the offsets consumer group {@code group} committed. */
    long backlog(String group, String topic) {
        return Long.parseLong(request("backlog " + group + " " + topic, List.of()).ok());
    }

    private static final Base64.Encoder BASE64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder UNBASE64 = Base64.getUrlDecoder();

    private static String text(String s) {
        return BASE64.encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String untext(String s) {
        return new String(UNBASE64.decode(s), StandardCharsets.UTF_8);
    }

    private void command(String command) {
        assertThat(request(command, List.of()).ok()).as(command).isEmpty();
    }

    /** An answer: the lines before {@code ok}, and what follows {@code ok} on its line. */
    private record Answer(List<String> lines, String ok) {
    }

    /** Sends a command and the lines that follow it; fails with the process's log on {@code error} or its end. */
    private synchronized Answer request(String command, List<String> body) {
        try {
            assertThat(process.isAlive()).as("the embedded RocketMQ runs (its log: %s)", log()).isTrue();
            in.println(command);
            body.forEach(in::println);
            in.flush();
            List<String> lines = new ArrayList<>();
            for (String answer = out.readLine(); ; answer = out.readLine()) {
                if (answer == null || answer.startsWith("error")) {
                    throw new AssertionError(command + ": " + (answer == null ? "the embedded RocketMQ ended"
                            : answer) + " (its log: " + log() + ")");
                }
                if (answer.equals("ok") || answer.startsWith("ok ")) {
                    return new Answer(lines, answer.substring(2).trim());
                }
                lines.add(answer);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The {@code JAVA_OPTS} of a {@code bin/idem} whose pipelines are alone in their consumer groups: RocketMQ's client
     * rebalances at most every 100 ms instead of every second, and the adapter then sends its first heartbeat at once,
     * so a consumer owns its queues about a second sooner. Not for groups of several processes that crash and restart:
     * they rebalance that much more often.
     */
    static String singleConsumerJavaOpts() {
        return Installation.JAVA_OPTS + " -Drocketmq.client.rebalance.minInterval=100";
    }

    /** The {@code broker:} section of a configuration on this broker. */
    String brokerConfig() {
        return """
                broker:
                  type: rocketmq
                  rocketmq:
                    name-server: [%s]
                """.formatted(nameServer);
    }

    /** The {@code broker:} section, consumer groups named {@code <groupPrefix><pipeline>}. */
    String brokerConfig(String groupPrefix) {
        return brokerConfig() + "    group-prefix: \"" + groupPrefix + "\"\n";
    }

    @Override
    public String toString() {
        return "embedded RocketMQ at " + nameServer + " (pid " + process.pid() + ")";
    }

}
