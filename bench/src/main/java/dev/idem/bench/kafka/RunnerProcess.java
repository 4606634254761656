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
 * A peer's runner in a JVM of its own (its all-in-one JAR, which the bench build copies to {@code bench/target}),
 * started once and told one run at a time over its standard input: it answers each {@code run ...} line with
 * {@code done <number>...} and ends on {@code quit}. Its standard error is this one's. Not thread-safe.
 */
final class RunnerProcess implements AutoCloseable {

    private final String peer;
    private final Process process;
    private final Writer commands;
    private final BufferedReader answers;

    private RunnerProcess(String peer, Process process) {
        this.peer = peer;
        this.process = process;
        this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /**
     * Starts {@code main} from the runner JAR on the same {@code java} as this JVM.
     *
     * @param peer what runs there, for messages ("Camel")
     * @param jarFile the JAR's name in {@code bench/target}
     * @param jarProperty the system property that points at the JAR elsewhere
     * @param module the Maven module that builds it
     */
    static RunnerProcess start(String peer, String jarFile, String jarProperty, String module, String main,
            List<String> args) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-cp", jar(peer, jarFile, jarProperty, module).toString(), main));
        command.addAll(args);
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        return new RunnerProcess(peer, process);
    }

    private static Path jar(String peer, String jarFile, String jarProperty, String module) {
        String configured = System.getProperty(jarProperty);
        Path jar;
        if (configured != null) {
            jar = Path.of(configured);
        } else {
            try {
                // benchmarks.jar, or target/classes when run from an IDE: either way, in bench/target.
                Path here = Path.of(RunnerProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI());
                jar = here.getParent().resolve(jarFile);
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("No " + peer + " runner at " + jar + ": build it with"
                    + " 'mvn -q -B -pl bench -am package -DskipTests' (module " + module + "), or point -D"
                    + jarProperty + " at it");
        }
        return jar;
    }

    /** Sends one {@code run} line about {@code topic} and returns the numbers of its {@code done} answer. */
    long[] run(String topic, String... words) throws IOException {
        commands.write("run " + topic + " " + String.join(" ", words) + "\n");
        commands.flush();
        String answer = answers.readLine();
        if (answer == null || !answer.startsWith("done ")) {
            throw new IllegalStateException("The " + peer + " runner failed on " + topic + " (answered " + answer
                    + "); its errors are above");
        }
        String[] numbers = answer.substring("done ".length()).split(" ");
        long[] values = new long[numbers.length];
        for (int i = 0; i < numbers.length; i++) {
            values[i] = Long.parseLong(numbers[i]);
        }
        return values;
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
