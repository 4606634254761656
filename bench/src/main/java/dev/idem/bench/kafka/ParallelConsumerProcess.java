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
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The JVM that runs Confluent Parallel Consumer for {@link KeyOrderedBenchmark}: module
 * {@code bench/parallel-consumer}, whose all-in-one JAR the bench build copies to
 * {@code bench/target/parallel-consumer.jar} (system property {@code idem.bench.parallel-consumer.jar} points
 * elsewhere). Parallel Consumer needs kafka-clients 3.x and this JVM holds 4.x, hence a JVM of its own,
 * started once and told one run at a time over its standard input; its standard error is this one's.
 * Not thread-safe.
 */
final class ParallelConsumerProcess implements AutoCloseable {

    static final String JAR_PROPERTY = "idem.bench.parallel-consumer.jar";
    private static final String MAIN = "dev.idem.bench.parallelconsumer.ParallelConsumerRunner";

    private final Process process;
    private final Writer commands;
    private final BufferedReader answers;

    /** What one run measured. */
    record Result(long nanos, long orderViolations) {
    }

    private ParallelConsumerProcess(Process process) {
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /**
     * Starts the runner JVM on the same {@code java} as this one.
     *
     * @param concurrency Parallel Consumer's {@code maxConcurrency}
     * @param handlerMillis how long its handler sleeps per record
     */
    static ParallelConsumerProcess start(String bootstrapServers, int concurrency, long handlerMillis)
            throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(List.of(java.toString(), "-cp", jar().toString(), MAIN,
                bootstrapServers, Integer.toString(concurrency), Long.toString(handlerMillis)))
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        return new ParallelConsumerProcess(process);
    }

    private static Path jar() {
        String configured = System.getProperty(JAR_PROPERTY);
        Path jar;
        if (configured != null) {
            jar = Path.of(configured);
        } else {
            try {
                // benchmarks.jar, or target/classes when run from an IDE: either way, in bench/target.
                Path here = Path.of(ParallelConsumerProcess.class.getProtectionDomain().getCodeSource()
                        .getLocation().toURI());
                jar = here.getParent().resolve("parallel-consumer.jar");
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("No Parallel Consumer runner at " + jar + ": build it with"
                    + " 'mvn -q -B -pl bench -am package -DskipTests' (module bench/parallel-consumer), or point -D"
                    + JAR_PROPERTY + " at it");
        }
        return jar;
    }

    /** Reads the whole of {@code topic} with a new consumer group {@code group}; waits for the answer. */
    Result run(String topic, String group, int records) throws IOException {
        commands.write("run " + topic + " " + group + " " + records + "\n");
        commands.flush();
        String answer = answers.readLine();
        if (answer == null || !answer.startsWith("done ")) {
            throw new IllegalStateException("The Parallel Consumer runner failed on " + topic + " (answered "
                    + answer + "); its errors are above");
        }
        String[] words = answer.split(" ");
        return new Result(Long.parseLong(words[1]), Long.parseLong(words[2]));
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
