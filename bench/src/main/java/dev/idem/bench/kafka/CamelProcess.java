package dev.idem.bench.kafka;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The JVM that runs Apache Camel's idempotent consumer for {@link KafkaStoreBenchmark}: module
 * {@code bench/camel}, whose all-in-one JAR the bench build copies to {@code bench/target/camel.jar} (system
 * property {@code idem.bench.camel.jar} points elsewhere). Camel 4.17 brings kafka-clients 3.9 and Spring 6,
 * and this JVM holds kafka-clients 4.x, hence a JVM of its own, started once and told one run at a time over
 * its standard input; its standard error is this one's. Not thread-safe.
 */
final class CamelProcess implements AutoCloseable {

    static final String JAR_PROPERTY = "idem.bench.camel.jar";
    private static final String MAIN = "dev.idem.bench.camel.CamelRunner";

    private final Process process;
    private final Writer commands;
    private final BufferedReader answers;

    /** What one run measured: its nanoseconds, and how many records were processed and skipped as duplicates. */
    record Result(long nanos, long processed, long duplicates) {
    }

    private CamelProcess(Process process) {
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /**
     * Starts the runner JVM on the same {@code java} as this one.
     *
     * @param consumers camel-kafka's {@code consumersCount}: Kafka consumers, each on a thread of its own
     * @param store {@code redis} or {@code postgresql}
     * @param endpoint the Redis URI or the JDBC URL
     * @param user the database user; ignored for Redis
     */
    static CamelProcess start(String bootstrapServers, int consumers, String store, String endpoint, String user)
            throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString(), "-cp", jar().toString(), MAIN,
                bootstrapServers, Integer.toString(consumers), store, endpoint));
        if (store.equals("postgresql")) {
            command.add(user);
        }
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        return new CamelProcess(process);
    }

    private static Path jar() {
        String configured = System.getProperty(JAR_PROPERTY);
        Path jar;
        if (configured != null) {
            jar = Path.of(configured);
        } else {
            try {
                // benchmarks.jar, or target/classes when run from an IDE: either way, in bench/target.
                Path here = Path.of(CamelProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI());
                jar = here.getParent().resolve("camel.jar");
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("No Camel runner at " + jar + ": build it with"
                    + " 'mvn -q -B -pl bench -am package -DskipTests' (module bench/camel), or point -D"
                    + JAR_PROPERTY + " at it");
        }
        return jar;
    }

    /**
     * Reads the whole of {@code topic} with a new consumer group {@code group} through a new repository
     * {@code repository} (a Redis set's key or a processor name); waits for the answer.
     */
    Result run(String topic, String group, int records, String repository) throws IOException {
        commands.write("run " + topic + " " + group + " " + records + " " + repository + "\n");
        commands.flush();
        String answer = answers.readLine();
        if (answer == null || !answer.startsWith("done ")) {
            throw new IllegalStateException("The Camel runner failed on " + topic + " (answered " + answer
                    + "); its errors are above");
        }
        String[] words = answer.split(" ");
        return new Result(Long.parseLong(words[1]), Long.parseLong(words[2]), Long.parseLong(words[3]));
    }

    /** Tells the runner to quit and waits for it; ends it after 30 seconds. */
    @Override
    public void close() {
        try {
            commands.write("quit\n");
            commands.close();
        } catch (IOException e) {
            // it has exited already
        }
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
