package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.idem.cli.poison.PoisonHandler;
import dev.idem.spi.DeadLetterReason;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Poison messages end to end: {@value #MESSAGES} messages, {@code P} = {@value #POISON_COUNT} of them poison (the
 * handler, {@link PoisonHandler}, halts the JVM whenever it runs one), consumed by {@code bin/idem run} from the
 * local RabbitMQ with the JDBC store on the local PostgreSQL, and restarted by this test whenever it dies, as a
 * process supervisor would. Each poison message must be dead-lettered, with cause {@code max-deliveries}, after
 * at most {@code max-deliveries + 1} crashes; no other message may be dead-lettered; every other message is
 * processed: in plain mode with re-runs of at most {@code max-in-flight} per crash, in transactional mode
 * exactly once (one business row, written through the store's transaction).
 *
 * <p>The handler appends one line per run to a file (ID, attempt, pid), so runs are counted per message ID and
 * each crash is traced to the poison message that caused it; the test consumes the dead-letter queue
 * ({@code <source>.DLQ}) itself, so it sees every dead letter and its headers as they arrive. The restarts are
 * bounded ({@code P * (max-deliveries + 1)}) and so is the whole scenario ({@link #DEADLINE}); either bound
 * fails with the crashes and the counts so far. Each scenario prints its counts.
 *
 * <p>On RocketMQ (the embedded name server and broker, {@link RocketMqProcess}; a topic of four queues) the
 * transactional scenario runs too: the dead letters are read from the topic {@code <source>-DLQ}, where they stay, and
 * the source's backlog is what follows the consumer group's committed offsets.
 */
class PoisonIT {

    private static final int MESSAGES = 300;
    private static final String ID_PREFIX = "m-";
    private static final List<String> POISON = List.of("m-50", "m-200");
    private static final int POISON_COUNT = 2;
    private static final int MAX_DELIVERIES = 2;
    private static final int MAX_IN_FLIGHT = 40;
    private static final int CONCURRENCY = 4;
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** How long an innocent run works: long enough that other messages are in flight when a poison halts. */
    private static final int WORK_MILLIS = 20;
    /** The restarts a correct runtime may need at most. */
    private static final int MAX_CRASHES = POISON_COUNT * (MAX_DELIVERIES + 1);
    /** From the first {@code idem run} until everything must be settled. */
    private static final Duration DEADLINE = Duration.ofSeconds(75);
    /** Nothing may change for this long (beyond a lease, so deferred keys were looked at again) to call it settled. */
    private static final Duration QUIET = LEASE.plusSeconds(3);
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void plainModeDeadLettersOnlyThePoisonAndReRunsAtMostTheInFlightWindowPerCrash() throws Exception {
        new Scenario(false).run();
    }

    @Test
    void transactionalModeDeadLettersOnlyThePoisonAndProcessesEveryOtherMessageExactlyOnce() throws Exception {
        new Scenario(true).run();
    }

    @Test
    void rocketMqTransactionalModeDeadLettersOnlyThePoisonAndProcessesEveryOtherMessageExactlyOnce()
            throws Exception {
        new Scenario(true, new RocketMqTopic(RocketMqProcess.shared(), "idem-poison-" + run)).run();
    }

    /** One crash: the process, its exit status, and the poison runs it had started. */
    private record Crash(long pid, int exit, List<String> poisonRuns) {
        @Override
        public String toString() {
            return "pid " + pid + " exit " + exit + " running " + poisonRuns;
        }
    }

    /** One message read from the dead-letter queue. */
    private record DeadLetter(String id, String cause, String attempts, String detail) {
    }

    /** The source and dead-letter destination of a scenario, of its own. */
    private interface Broker extends AutoCloseable {
        /** "RabbitMQ", ... for the scenario's name. */
        String name();

        /** The {@code broker:} section of the configuration. */
        String config();

        String source();

        /** Creates the source and the dead-letter destination, so that published messages wait for idem run. */
        void open() throws Exception;

        /** Messages of the source not acknowledged yet. */
        long ready() throws Exception;

        /** Dead letters that {@link #deadLetters()} does not show yet. */
        long deadLetterReady() throws Exception;

        /** Every dead letter so far, in the order they came. */
        List<DeadLetter> deadLetters() throws Exception;

        /** Deletes the source and the dead-letter destination. */
        @Override
        void close() throws Exception;

        /** What {@code bin/idem} needs in its environment for this broker. */
        default Map<String, String> env() {
            return Map.of();
        }
    }

    /**
     * A queue of the local RabbitMQ and its {@code .DLQ}, declared as the adapter declares them (durable, classic); the
     * test consumes the dead-letter queue itself, so it sees every dead letter and its headers as they arrive.
     */
    private static final class RabbitQueue implements Broker {
        private final String uri = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2F", "Start it with: rabbitmq-server -detached", null);
        private final String queue;
        private final String deadLetterQueue;
        private final ConcurrentLinkedQueue<DeadLetter> deadLetters = new ConcurrentLinkedQueue<>();
        private com.rabbitmq.client.Connection rabbit;
        private Channel channel;

        RabbitQueue(String queue) {
            this.queue = queue;
            this.deadLetterQueue = queue + ".DLQ";
        }

        @Override
        public String name() {
            return "RabbitMQ";
        }

        @Override
        public String config() {
            return EndToEndIT.rabbitMqBroker(uri);
        }

        @Override
        public String source() {
            return queue;
        }

        @Override
        public void open() throws Exception {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(uri);
            rabbit = factory.newConnection("poison-it");
            channel = rabbit.createChannel();
            channel.queueDeclare(queue, true, false, false, null);
            channel.queueDeclare(deadLetterQueue, true, false, false, null);
            channel.basicConsume(deadLetterQueue, true, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    deadLetters.add(deadLetter(props));
                }
            });
        }

        @Override
        public long ready() throws IOException {
            return channel.queueDeclarePassive(queue).getMessageCount();
        }

        @Override
        public long deadLetterReady() throws IOException {
            return channel.queueDeclarePassive(deadLetterQueue).getMessageCount();
        }

        @Override
        public List<DeadLetter> deadLetters() {
            return List.copyOf(deadLetters);
        }

        @Override
        public void close() throws Exception {
            if (rabbit == null) {
                return;
            }
            try {
                channel.queueDelete(queue);
                channel.queueDelete(deadLetterQueue);
            } finally {
                rabbit.close();
            }
        }
    }

    /**
     * A topic of four queues on the embedded RocketMQ and its {@code -DLQ} topic (the adapter's default), created
     * before idem runs. The dead letters stay in their topic: each look reads all of it from the broker's store, so
     * none is ever waiting to be seen. The source's backlog is what follows the offsets the pipeline's consumer
     * group committed.
     */
    private final class RocketMqTopic implements Broker {
        private final RocketMqProcess rocketMq;
        private final String topic;
        private final String groupPrefix = "poison-" + run + "-";

        RocketMqTopic(RocketMqProcess rocketMq, String topic) {
            this.rocketMq = rocketMq;
            this.topic = topic;
        }

        @Override
        public String name() {
            return "RocketMQ";
        }

        /**
         * Offsets committed every 100 ms: a poison's crash then redelivers little beyond what was in flight, and the
         * backlog the test waits on follows the acks closely.
         */
        @Override
        public String config() {
            return rocketMq.brokerConfig(groupPrefix) + "    commit-interval: 100ms\n";
        }

        /** One process in the group: its consumer may own the queues as soon as it starts. */
        @Override
        public Map<String, String> env() {
            return Map.of("JAVA_OPTS", RocketMqProcess.singleConsumerJavaOpts());
        }

        @Override
        public String source() {
            return topic;
        }

        @Override
        public void open() {
            rocketMq.createTopic(topic, 4);
            rocketMq.createTopic(topic + "-DLQ", 4);
        }

        @Override
        public long ready() {
            return rocketMq.backlog(groupPrefix + "poison", topic);
        }

        @Override
        public long deadLetterReady() {
            return 0;
        }

        @Override
        public List<DeadLetter> deadLetters() {
            return rocketMq.messages(topic + "-DLQ").stream().map(m -> new DeadLetter(
                    m.properties().get("message-id"), m.properties().get(DeadLetterReason.HEADER_CAUSE),
                    m.properties().get(DeadLetterReason.HEADER_ATTEMPTS),
                    m.properties().get(DeadLetterReason.HEADER_DETAIL))).toList();
        }

        @Override
        public void close() {
            rocketMq.deleteTopic(topic);
            rocketMq.deleteTopic(topic + "-DLQ");
        }
    }

    /** One line of the runs file. */
    private record Run(String id, int attempt, long pid) {
    }

    private final class Scenario {
        final boolean transactional;
        final String name;
        final Broker broker;
        final Installation idem = Installation.in(dir);
        final int port = Installation.freePort();
        final String schema = "idem_poison_" + run;
        final Path runsFile = idem.home.resolve("data/poison-runs.log");
        final String postgresUrl;
        final List<String> ids = IntStream.rangeClosed(1, MESSAGES).mapToObj(n -> ID_PREFIX + n).toList();
        final List<String> innocent = ids.stream().filter(id -> !POISON.contains(id)).toList();
        final List<Crash> crashes = new ArrayList<>();
        final long started = System.nanoTime();
        Installation.Running current;
        String fatal;
        Object lastSnapshot;
        long changedAt = System.nanoTime();

        /** On a queue of the local RabbitMQ. */
        Scenario(boolean transactional) {
            this(transactional, new RabbitQueue("idem-poison-" + run));
        }

        Scenario(boolean transactional, Broker broker) {
            assertThat(POISON).hasSize(POISON_COUNT);
            this.transactional = transactional;
            this.broker = broker;
            this.name = transactional ? "transactional (" + broker.name() + " + PostgreSQL, one transaction per run)"
                    : "plain (" + broker.name() + " + PostgreSQL store)";
            this.postgresUrl = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                    "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
            idem.env.put(PoisonHandler.POISON_IDS_ENV, String.join(",", POISON));
            idem.env.put(PoisonHandler.RUNS_ENV, runsFile.toString());
            idem.env.put(PoisonHandler.TRANSACTIONAL_ENV, Boolean.toString(transactional));
            idem.env.put(PoisonHandler.WORK_MS_ENV, Integer.toString(WORK_MILLIS));
            idem.env.putAll(broker.env());
        }

        String config() {
            return broker.config() + """
                    store:
                      type: jdbc
                      jdbc: { url: "%s?currentSchema=%s", username: postgres }
                    pipelines:
                      poison:
                        source: %s
                        handler: %s
                        transactional: %s
                        concurrency: %d
                        max-in-flight: %d
                        lease: %ds
                        max-deliveries: %d
                        retention: 1h
                        id:
                          - type: header
                            name: message-id
                    runtime:
                      summary-interval: 5s
                      shutdown-timeout: 10s
                      http: { port: %d }
                    """.formatted(postgresUrl, schema, broker.source(), PoisonHandler.class.getName(), transactional,
                    CONCURRENCY, MAX_IN_FLIGHT, LEASE.toSeconds(), MAX_DELIVERIES, port);
        }

        void run() throws Exception {
            sql("CREATE SCHEMA " + schema);
            sql("CREATE TABLE " + schema + "." + PoisonHandler.TABLE
                    + " (message_id VARCHAR(64) NOT NULL, pid BIGINT NOT NULL, attempt INT NOT NULL)");
            try (Broker b = broker) {
                // Before idem runs, so that the messages wait for it.
                b.open();
                try {
                    HandlerJar.install(idem, PoisonHandler.class, "poison-handler.jar");
                    idem.writeConfig(config());
                    Installation.Result published = idem.run(COMMAND_TIMEOUT, "publish", "--count",
                            Integer.toString(MESSAGES), "--id", ID_PREFIX);
                    assertThat(published.exitCode()).as(published.toString()).isZero();
                    assertThat(published.out()).contains("Published " + MESSAGES + " message(s)");

                    superviseUntilSettled();
                    int exit = current.terminate(Duration.ofSeconds(30));
                    assertThat(exit).as("SIGTERM ends a graceful stop with 128+15\n%s", current.log()).isEqualTo(143);
                    assertOutcome();
                } finally {
                    if (current != null && current.process.isAlive()) {
                        current.kill();
                    }
                }
            } finally {
                sql("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            }
        }

        // ------------------------------------------------------------------ the supervisor

        /** Runs {@code idem run}, restarting it whenever the poison handler halted it, until everything settled. */
        private void superviseUntilSettled() {
            current = idem.start("run");
            try {
                await().atMost(DEADLINE).pollInSameThread().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(250))
                        .until(this::step);
            } catch (ConditionTimeoutException e) {
                throw new AssertionError("Not settled within " + DEADLINE + ".\n" + report()
                        + "\n--- log of the last idem run\n" + tail(current.log()));
            }
            if (fatal != null) {
                throw new AssertionError(fatal + "\n" + report() + "\n--- log of the last idem run\n"
                        + tail(current.log()));
            }
        }

        /** One look: restart a dead process, or tell whether every message is settled. True ends the wait. */
        private boolean step() throws Exception {
            if (!current.process.isAlive()) {
                int exit = current.process.exitValue();
                long pid = current.process.pid();
                crashes.add(new Crash(pid, exit, runs().stream().filter(r -> r.pid() == pid && POISON.contains(r.id()))
                        .map(r -> r.id() + "#" + r.attempt()).toList()));
                if (exit != PoisonHandler.HALT_STATUS) {
                    fatal = "bin/idem run (pid " + pid + ") exited with " + exit + ", not the poison handler's halt"
                            + " status " + PoisonHandler.HALT_STATUS;
                    return true;
                }
                if (crashes.size() > MAX_CRASHES) {
                    fatal = "More crashes (" + crashes.size() + ") than P * (max-deliveries + 1) = " + MAX_CRASHES
                            + ": a poison message kept running after max-deliveries starts";
                    return true;
                }
                current = idem.start("run");
                changedAt = System.nanoTime();
                return false;
            }
            Counts counts = counts();
            Object snapshot = List.of(counts, current.outcomes(port));
            if (!snapshot.equals(lastSnapshot)) {
                lastSnapshot = snapshot;
                changedAt = System.nanoTime();
            }
            boolean accountedFor = ids.stream().allMatch(id -> counts.effects.containsKey(id)
                    || counts.deadLettered.containsKey(id));
            return accountedFor && counts.ready == 0 && counts.deadLetterReady == 0
                    && System.nanoTime() - changedAt >= QUIET.toNanos();
        }

        // ------------------------------------------------------------------ what happened

        /** What the runs file, the business table and the queues show now. */
        private record Counts(Map<String, Integer> runs, Map<String, Integer> effects, List<DeadLetter> deadLetters,
                Map<String, Integer> deadLettered, long ready, long deadLetterReady) {
        }

        private Counts counts() throws Exception {
            Map<String, Integer> runCounts = new TreeMap<>();
            for (Run r : runs()) {
                runCounts.merge(r.id(), 1, Integer::sum);
            }
            Map<String, Integer> effects;
            if (transactional) {
                effects = rowsPerMessage();
            } else {
                // In plain mode the run is the effect; a poison run halts before it could count as one.
                effects = new TreeMap<>(runCounts);
                POISON.forEach(effects::remove);
            }
            List<DeadLetter> deadLetters = broker.deadLetters();
            Map<String, Integer> deadLettered = new TreeMap<>();
            deadLetters.forEach(d -> deadLettered.merge(d.id(), 1, Integer::sum));
            return new Counts(runCounts, effects, deadLetters, deadLettered, broker.ready(), broker.deadLetterReady());
        }

        private List<Run> runs() {
            if (!Files.exists(runsFile)) {
                return List.of();
            }
            try {
                List<Run> runs = new ArrayList<>();
                for (String line : Files.readAllLines(runsFile, StandardCharsets.UTF_8)) {
                    String[] f = line.split("\t");
                    if (f.length == 3) {
                        runs.add(new Run(f[0], Integer.parseInt(f[1]), Long.parseLong(f[2])));
                    }
                }
                return runs;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private Map<String, Integer> rowsPerMessage() {
            Map<String, Integer> rows = new TreeMap<>();
            try (Connection c = DriverManager.getConnection(postgresUrl + "?user=postgres");
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT message_id, COUNT(*) FROM " + schema + "."
                            + PoisonHandler.TABLE + " GROUP BY message_id")) {
                while (rs.next()) {
                    rows.put(rs.getString(1), rs.getInt(2));
                }
            } catch (SQLException e) {
                throw new AssertionError("Reading " + schema + "." + PoisonHandler.TABLE + " failed: " + e, e);
            }
            return rows;
        }

        private String report() {
            Counts c;
            try {
                c = counts();
            } catch (Exception e) {
                return "(counts unavailable: " + e + ")";
            }
            List<String> missing = innocent.stream().filter(id -> !c.effects.containsKey(id)).toList();
            List<String> innocentDeadLettered = innocent.stream().filter(c.deadLettered::containsKey).toList();
            long reruns = innocent.stream().mapToLong(id -> Math.max(0, c.runs.getOrDefault(id, 0) - 1)).sum();
            Map<String, Integer> poisonRuns = new LinkedHashMap<>();
            POISON.forEach(id -> poisonRuns.put(id, c.runs.getOrDefault(id, 0)));
            List<DeadLetter> deadLetters = c.deadLetters;
            Map<String, Long> causes = deadLetters.stream()
                    .collect(Collectors.groupingBy(d -> String.valueOf(d.cause()), TreeMap::new, Collectors.counting()));
            StringBuilder out = new StringBuilder();
            out.append("[poison] ").append(name).append(" after ")
                    .append(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started)).append("s\n");
            out.append("  messages ").append(MESSAGES).append(", poison ").append(POISON).append(", max-deliveries ")
                    .append(MAX_DELIVERIES).append(", max-in-flight ").append(MAX_IN_FLIGHT).append(", lease ")
                    .append(LEASE.toSeconds()).append("s\n");
            out.append("  crashes ").append(crashes.size()).append(" (limit ").append(MAX_CRASHES).append("): ")
                    .append(crashes).append('\n');
            out.append("  runs of each poison message ").append(poisonRuns).append(" (limit ").append(MAX_DELIVERIES + 1)
                    .append(")\n");
            out.append("  dead letters ").append(deadLetters.size()).append(" (expected ").append(POISON_COUNT)
                    .append("), by cause ").append(causes).append("; of innocent messages ")
                    .append(innocentDeadLettered.size()).append(' ').append(first(innocentDeadLettered)).append('\n');
            deadLetters.stream().limit(8).forEach(d -> out.append("    ").append(d).append('\n'));
            out.append("  innocent messages with an effect ").append(innocent.size() - missing.size()).append('/')
                    .append(innocent.size()).append(", missing ").append(first(missing)).append('\n');
            out.append("  handler runs ").append(c.runs.values().stream().mapToInt(Integer::intValue).sum())
                    .append(", re-runs of innocent messages ").append(reruns).append(" (limit ")
                    .append((long) crashes.size() * MAX_IN_FLIGHT).append(" = crashes x max-in-flight)\n");
            if (transactional) {
                List<String> notOnce = c.effects.entrySet().stream().filter(e -> e.getValue() != 1)
                        .map(e -> e.getKey() + "=" + e.getValue()).toList();
                out.append("  business rows ").append(c.effects.values().stream().mapToInt(Integer::intValue).sum())
                        .append(", messages with other than one row ").append(first(notOnce)).append('\n');
            }
            out.append("  source queue ready ").append(c.ready).append(", dead-letter queue ready ")
                    .append(c.deadLetterReady);
            return out.toString();
        }

        // ------------------------------------------------------------------ the verdict

        private void assertOutcome() throws Exception {
            Counts c = counts();
            String report = report();
            System.out.println(report);
            List<DeadLetter> deadLetters = c.deadLetters;
            List<String> deadLettered = deadLetters.stream().map(d -> d.id() + " (" + d.cause() + ")").toList();
            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(c.ready).as("messages left in the source queue after a graceful stop").isZero();
            softly.assertThat(deadLettered).as("dead letters: exactly the P poison messages").hasSize(POISON_COUNT);
            softly.assertThat(c.deadLettered.keySet()).as("dead-lettered IDs").containsExactlyInAnyOrderElementsOf(POISON);
            softly.assertThat(deadLetters).as("the cause header (%s) of every dead letter", DeadLetterReason.HEADER_CAUSE)
                    .allSatisfy(d -> assertThat(d.cause()).as(String.valueOf(d.id())).isEqualTo("max-deliveries"));
            softly.assertThat(crashes.size()).as("crashes, at most P * (max-deliveries + 1)")
                    .isLessThanOrEqualTo(MAX_CRASHES);
            for (String id : POISON) {
                softly.assertThat(c.runs.getOrDefault(id, 0)).as("runs of poison %s", id).isBetween(1, MAX_DELIVERIES + 1);
            }
            List<String> missing = innocent.stream().filter(id -> !c.effects.containsKey(id)).toList();
            softly.assertThat(missing).as("innocent messages never processed").isEmpty();
            if (transactional) {
                Map<String, Integer> notOnce = c.effects.entrySet().stream().filter(e -> e.getValue() != 1)
                        .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue, (a, b) -> a, TreeMap::new));
                softly.assertThat(notOnce).as("business rows per message other than exactly one").isEmpty();
                softly.assertThat(c.effects.keySet()).as("business rows of poison messages (must have rolled back)")
                        .doesNotContainAnyElementsOf(POISON);
            } else {
                long reruns = innocent.stream().mapToLong(id -> Math.max(0, c.runs.getOrDefault(id, 0) - 1)).sum();
                softly.assertThat(reruns).as("re-runs of innocent messages, at most max-in-flight per crash")
                        .isLessThanOrEqualTo((long) crashes.size() * MAX_IN_FLIGHT);
            }
            List<AssertionError> failed = softly.assertionErrorsCollected();
            if (!failed.isEmpty()) {
                // Every failed expectation, then the counts once.
                throw new AssertionError(failed.size() + " expectation(s) failed:\n" + failed.stream()
                        .map(e -> "- " + e.getMessage().strip().replace("\n", "\n  "))
                        .collect(Collectors.joining("\n")) + "\n" + report);
            }
        }

        // ------------------------------------------------------------------ helpers

        private void sql(String statement) {
            try (Connection c = DriverManager.getConnection(postgresUrl + "?user=postgres");
                    Statement s = c.createStatement()) {
                s.execute(statement);
            } catch (SQLException e) {
                throw new AssertionError(statement + " failed: " + e, e);
            }
        }
    }

    private static DeadLetter deadLetter(AMQP.BasicProperties props) {
        Map<String, Object> headers = props.getHeaders() == null ? Map.of() : props.getHeaders();
        String id = props.getMessageId() != null ? props.getMessageId() : text(headers.get("message-id"));
        return new DeadLetter(id, text(headers.get(DeadLetterReason.HEADER_CAUSE)),
                text(headers.get(DeadLetterReason.HEADER_ATTEMPTS)), text(headers.get(DeadLetterReason.HEADER_DETAIL)));
    }

    /** AMQP header values arrive as {@code LongString}s, whose {@code toString} is their text. */
    private static String text(Object value) {
        return value == null ? null : value.toString();
    }

    private static String first(List<String> items) {
        return items.size() <= 20 ? items.toString()
                : items.subList(0, 20) + " and " + (items.size() - 20) + " more";
    }

    private static String tail(String log) {
        String[] lines = log.split("\n");
        return String.join("\n", Arrays.asList(lines).subList(Math.max(0, lines.length - 40), lines.length));
    }
}
