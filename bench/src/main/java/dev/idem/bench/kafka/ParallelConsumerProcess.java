package dev.idem.bench.kafka;

import java.io.IOException;
import java.util.List;

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

    private final RunnerProcess runner;

    /** What one run measured. */
    record Result(long nanos, long orderViolations) {
    }

    private ParallelConsumerProcess(RunnerProcess runner) {
        this.runner = runner;
    }

    /**
     * Starts the runner JVM on the same {@code java} as this one.
     *
     * @param concurrency Parallel Consumer's {@code maxConcurrency}
     * @param handlerMillis how long its handler sleeps per record
     */
    static ParallelConsumerProcess start(String bootstrapServers, int concurrency, long handlerMillis)
            throws IOException {
        return new ParallelConsumerProcess(RunnerProcess.start("Parallel Consumer", "parallel-consumer.jar",
                JAR_PROPERTY, "bench/parallel-consumer", MAIN,
                List.of(bootstrapServers, Integer.toString(concurrency), Long.toString(handlerMillis))));
    }

    /** Reads the whole of {@code topic} with a new consumer group {@code group}; waits for the answer. */
    Result run(String topic, String group, int records) throws IOException {
        long[] answer = runner.run(topic, group, Integer.toString(records));
        return new Result(answer[0], answer[1]);
    }

    @Override
    public void close() {
        runner.close();
    }
}
