package dev.idem.bench.kafka;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

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

    private final RunnerProcess runner;

    /** What one run measured: its nanoseconds, and how many records were processed and skipped as duplicates. */
    record Result(long nanos, long processed, long duplicates) {
    }

    private CamelProcess(RunnerProcess runner) {
        this.runner = runner;
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
        List<String> args = new ArrayList<>(List.of(bootstrapServers, Integer.toString(consumers), store, endpoint));
        if (store.equals("postgresql")) {
            args.add(user);
        }
        return new CamelProcess(RunnerProcess.start("Camel", "camel.jar", JAR_PROPERTY, "bench/camel", MAIN, args));
    }

    /**
     * Reads the whole of {@code topic} with a new consumer group {@code group} through a new repository
     * {@code repository} (a Redis set's key or a processor name); waits for the answer.
     */
    Result run(String topic, String group, int records, String repository) throws IOException {
        long[] answer = runner.run(topic, group, Integer.toString(records), repository);
        return new Result(answer[0], answer[1], answer[2]);
    }

    @Override
    public void close() {
        runner.close();
    }
}
