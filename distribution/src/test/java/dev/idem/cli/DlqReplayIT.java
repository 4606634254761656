package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.cli.dlq.ReplayHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.activemq.broker.BrokerService;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;

/**
 * {@code idem dlq replay} on Kafka (the embedded KRaft broker), RabbitMQ (the local server) and ActiveMQ (a broker in
 * this JVM), in process: a pipeline whose handler fails dead-letters five messages; a dead letter of another pipeline
 * joins them; then a dry run, {@code --id}, {@code --limit} and a full run move them back while the pipeline runs
 * with its handler fixed, and each message is processed exactly once, with its key, payload and original headers and
 * without the dead-letter headers.
 *
 * <p>On Kafka the dead letters stay in the topic: the reader group moves past them. A dead letter left in place
 * (here by {@code --id}) keeps the group from moving past it, so the full run after it reads the one {@code --id}
 * moved again; the pipeline sees that copy as a duplicate.
 *
 * <p>On RocketMQ the same, out of process ({@link #rocketMq()}): its client does not run on this JVM's Netty.
 */
class DlqReplayIT {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final List<String> IDS = List.of("m-1", "m-2", "m-3", "m-4", "m-5");

    private static Level previousLevel;

    @TempDir
    Path home;

    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private final String pipeline = "orders-" + run;
    private String previousHome;

    /** Brokers in this JVM log through it at debug by default. */
    @BeforeAll
    static void quiet() {
        Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
        previousLevel = root.getLevel();
        root.setLevel(Level.WARN);
    }

    @AfterAll
    static void restoreLevel() {
        ((Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME)).setLevel(previousLevel);
    }

    @BeforeEach
    void home() {
        previousHome = System.getProperty("idem.home");
        System.setProperty("idem.home", home.toString());
    }

    @AfterEach
    void restoreHome() {
        if (previousHome == null) {
            System.clearProperty("idem.home");
        } else {
            System.setProperty("idem.home", previousHome);
        }
    }

    // ------------------------------------------------------------------ the three brokers

    @Test
    void kafka() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "dlq-replay-" + run;
        kafka.createTopic(topic, 1);
        kafka.createTopic(topic + ".DLQ", 1);
        try {
            new Scenario("""
                    broker:
                      type: kafka
                      kafka: { bootstrap-servers: "%s" }
                    """.formatted(kafka.bootstrapServers()), topic, topic + ".DLQ", true).run();
        } finally {
            kafka.deleteTopic(topic);
            kafka.deleteTopic(topic + ".DLQ");
        }
    }

    /**
     * With an exchange configured, as a pipeline source's topology: the replay must consume the dead-letter queue as
     * it is, so a probe published to the exchange reaches the source and not the dead-letter queue.
     */
    @Test
    void rabbitMq() throws Exception {
        String uri = rabbitMqUri();
        String queue = "idem-dlq-replay-" + run;
        String exchange = "idem-dlq-replay-" + run;
        try {
            new Scenario("""
                    broker:
                      type: rabbitmq
                      rabbitmq: { uri: "%s", declare: true, exchange: "%s" }
                    """.formatted(uri, exchange), queue, queue + ".DLQ", false).run();
            try (Connection c = rabbit(uri); Channel ch = c.createChannel()) {
                ch.confirmSelect();
                ch.basicPublish(exchange, "probe", new AMQP.BasicProperties.Builder().messageId("probe").build(),
                        new byte[0]);
                ch.waitForConfirmsOrDie(10_000);
                assertThat(ch.queueDeclarePassive(queue + ".DLQ").getMessageCount())
                        .as("the dead-letter queue holds the other pipeline's dead letter, and no probe").isEqualTo(1);
            }
        } finally {
            try (Connection c = rabbit(uri); Channel ch = c.createChannel()) {
                ch.queueDelete(queue);
                ch.queueDelete(queue + ".DLQ");
                ch.exchangeDelete(exchange);
            }
        }
    }

    @Test
    void activeMq() throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("idem-dlq-replay-" + run);
        broker.setPersistent(false);
        broker.setUseJmx(false);
        broker.setUseShutdownHook(false);
        broker.setAdvisorySupport(false);
        broker.addConnector("tcp://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        try {
            String url = "tcp://127.0.0.1:" + broker.getTransportConnectors().get(0).getConnectUri().getPort();
            new Scenario("""
                    broker:
                      type: activemq
                      activemq: { url: "%s" }
                    """.formatted(url), "orders-" + run, "orders-" + run + ".DLQ", false).run();
        } finally {
            broker.stop();
            broker.waitUntilStopped();
        }
    }

    /**
     * The scenario on RocketMQ, end to end through the built distribution: RocketMQ's client cannot run in this JVM (on
     * Netty 4.2; it needs 4.1), so {@code bin/idem run} with {@link ReplayHandler}, {@code bin/idem publish} and
     * {@code bin/idem dlq replay} are processes of their own on the embedded name server and broker
     * ({@link RocketMqProcess}), loading {@code plugins/rocketmq/} as shipped. The source and {@code <source>-DLQ}
     * have one queue each, so the dead letters are read in the order they were written; as on Kafka they stay in their
     * topic, and the reader group {@code idem-dlq-replay-<pipeline>} moves past them.
     */
    @Test
    void rocketMq() throws Exception {
        RocketMqProcess rocketMq = RocketMqProcess.shared();
        String topic = "dlq-replay-" + run;
        String deadLetters = topic + "-DLQ";
        rocketMq.createTopic(topic, 1);
        rocketMq.createTopic(deadLetters, 1);
        Installation idem = Installation.in(home.resolve("rocketmq"));
        int port = Installation.freePort();
        Path broken = idem.home.resolve("data/broken");
        Path processed = idem.home.resolve("data/processed.log");
        Files.createFile(broken);
        idem.env.put(ReplayHandler.BROKEN_ENV, broken.toString());
        idem.env.put(ReplayHandler.PROCESSED_ENV, processed.toString());
        // The pipeline's group and the replay's reader group have one member each.
        idem.env.put("JAVA_OPTS", RocketMqProcess.singleConsumerJavaOpts());
        HandlerJar.install(idem, ReplayHandler.class, "replay-handler.jar");
        // One handler run at a time, so the messages are dead-lettered in the order they were sent.
        idem.writeConfig(rocketMq.brokerConfig("dlq-" + run + "-") + """
                store: { type: caffeine }
                pipelines:
                  %s: { source: "%s", handler: %s, concurrency: 1, max-in-flight: 20 }
                runtime:
                  http: { port: %d }
                """.formatted(pipeline, topic, ReplayHandler.class.getName(), port));
        Installation.Running running = idem.start("run");
        try {
            awaitRunning(running, () -> running.outcomes(port).containsKey("processed"), "the pipeline to start");
            ok(idem, "publish", "--count", "5", "--id", "m-", "--key", "k-{n}", "--header", "tenant=acme");
            awaitRunning(running, () -> running.outcomes(port).getOrDefault("dead-lettered", 0L) == 5,
                    "5 dead letters");
            ok(idem, "publish", "--to", deadLetters, "--id", "r-1", "--header", "idem-pipeline=refunds",
                    "--header", "idem-dead-letter-cause=handler-failed");

            Installation.Result dry = ok(idem, replay("--dry-run"));
            assertThat(dry.out()).contains("would move m-1  (non-retryable, 1 attempt: ").contains("broken until fixed")
                    .containsSubsequence(IDS.stream().map(id -> "would move " + id).toList())
                    .contains("Dry run: 5 dead letters would move from '" + deadLetters + "' to '" + topic
                            + "'; nothing was moved, 1 skipped (1 of other pipelines), 0 failed");

            Files.delete(broken);
            Installation.Result one = ok(idem, replay("--id", "m-3"));
            assertThat(one.out()).contains("moved      m-3").contains("Moved 1 dead letter from");
            awaitRunning(running, () -> processedIds(processed).contains("m-3"), "m-3 to be processed");

            Installation.Result two = ok(idem, replay("--limit", "2"));
            assertThat(two.out()).containsSubsequence("moved      m-1", "moved      m-2")
                    .contains("Moved 2 dead letters").contains("--limit 2 reached");

            // The group could not move past m-1 while --id left it in place: m-3 is read and copied again.
            Installation.Result rest = ok(idem, replay());
            assertThat(rest.out()).containsSubsequence("moved      m-3", "moved      m-4", "moved      m-5")
                    .contains("Moved 3 dead letters").contains("1 skipped (1 of other pipelines), 0 failed");
            awaitRunning(running, () -> running.outcomes(port).getOrDefault("duplicate", 0L) == 1,
                    "the second copy of m-3 to be a duplicate");
            awaitRunning(running, () -> processedIds(processed).size() == IDS.size(), "5 messages processed");
            assertThat(processedIds(processed)).as("each message processed exactly once").isEqualTo(IDS);
            assertThat(Files.readAllLines(processed, StandardCharsets.UTF_8)).allSatisfy(line -> {
                String[] f = line.split("\t");
                String n = f[0].substring(2);
                assertThat(f[1]).as("key").isEqualTo("k-" + n);
                assertThat(f[2]).as("payload").contains("order-" + n);
                List<String> headers = List.of(f).subList(3, f.length);
                assertThat(headers).contains("tenant=acme");
                assertThat(headers).noneMatch(h -> DlqReplay.DEAD_LETTER_HEADERS.contains(h.substring(0,
                        h.indexOf('='))));
            });

            Installation.Result last = ok(idem, replay("--dry-run"));
            assertThat(last.out()).contains("No dead letters of pipeline '" + pipeline + "' in '" + deadLetters + "'");
            assertThat(running.terminate(Duration.ofSeconds(30))).as("SIGTERM ends a graceful stop with 128+15\n%s",
                    running.log()).isEqualTo(143);
        } finally {
            if (running.process.isAlive()) {
                running.kill();
            }
            rocketMq.deleteTopic(topic);
            rocketMq.deleteTopic(deadLetters);
        }
    }

    /** {@code dlq replay} of the pipeline, ending 1s after the last dead letter where the broker cannot count. */
    private String[] replay(String... options) {
        List<String> args = new ArrayList<>(List.of("dlq", "replay", "--pipeline", pipeline, "--idle", "1s"));
        args.addAll(List.of(options));
        return args.toArray(String[]::new);
    }

    private static Installation.Result ok(Installation idem, String... args) {
        Installation.Result result = idem.run(Duration.ofSeconds(60), args);
        assertThat(result.exitCode()).as("bin/idem %s\n%s", String.join(" ", args), result).isZero();
        return result;
    }

    /** The IDs {@link ReplayHandler} processed, sorted; one per run. */
    private static List<String> processedIds(Path processed) throws IOException {
        if (!Files.exists(processed)) {
            return List.of();
        }
        return Files.readAllLines(processed, StandardCharsets.UTF_8).stream().map(l -> l.split("\t")[0]).sorted()
                .toList();
    }

    /** Polls {@code condition}; fails early, with the process's log, if {@code bin/idem run} exits. */
    private static void awaitRunning(Installation.Running running, Callable<Boolean> condition, String what) {
        try {
            await().atMost(WAIT).pollInterval(Duration.ofMillis(200))
                    .failFast("bin/idem run exited", () -> !running.process.isAlive()).until(condition);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError("Waiting for " + what + ": " + e.getMessage() + "\n" + running.log(), e);
        }
    }

    /**
     * A copy the broker does not take (RabbitMQ returns a message to a queue that does not exist): the dead letter
     * stays, the run reports it and exits 1.
     */
    @Test
    void aCopyTheBrokerRefusesLeavesTheDeadLetterInPlace() throws Exception {
        String uri = rabbitMqUri();
        String deadLetters = "idem-dlq-replay-" + run + ".DLQ";
        try (Connection c = rabbit(uri); Channel ch = c.createChannel()) {
            ch.queueDeclare(deadLetters, true, false, false, null);
            ch.confirmSelect();
            ch.basicPublish("", deadLetters, new AMQP.BasicProperties.Builder().messageId("m-1")
                    .headers(Map.of("idem-pipeline", pipeline, "idem-dead-letter-cause", "handler-failed")).build(),
                    "{}".getBytes(StandardCharsets.UTF_8));
            ch.waitForConfirmsOrDie(10_000);
        }
        try {
            String config = config("""
                    broker:
                      type: rabbitmq
                      rabbitmq: { uri: "%s" }
                    store: { type: caffeine }
                    pipelines:
                      %s: { source: "idem-dlq-replay-%s-missing", dead-letter: "%s" }
                    """.formatted(uri, pipeline, run, deadLetters));

            Result result = idem("dlq", "replay", "--config", config, "--pipeline", pipeline);

            assertThat(result.exitCode()).as(result.toString()).isEqualTo(Main.FAILED);
            assertThat(result.out()).contains("failed     m-1  (not moved, the dead letter stays: ")
                    .contains("Moved 0 dead letters").contains("1 failed");
            try (Connection c = rabbit(uri); Channel ch = c.createChannel()) {
                assertThat(ch.queueDeclarePassive(deadLetters).getMessageCount()).isEqualTo(1);
            }
        } finally {
            try (Connection c = rabbit(uri); Channel ch = c.createChannel()) {
                ch.queueDelete(deadLetters);
            }
        }
    }

    /** A dead-letter queue that does not exist holds nothing, and the replay does not create it. */
    @Test
    void aDeadLetterQueueThatDoesNotExistHoldsNothing() throws Exception {
        String uri = rabbitMqUri();
        String deadLetters = "idem-dlq-replay-" + run + "-none.DLQ";
        String config = config("""
                broker:
                  type: rabbitmq
                  rabbitmq: { uri: "%s", declare: true }
                store: { type: caffeine }
                pipelines:
                  %s: { source: "idem-dlq-replay-%s-none", dead-letter: "%s" }
                """.formatted(uri, pipeline, run, deadLetters));

        Result result = ok(idem("dlq", "replay", "--config", config));

        assertThat(result.out()).isEqualTo("No dead letters of pipeline '" + pipeline + "' in '" + deadLetters
                + "'." + System.lineSeparator());
        try (Connection c = rabbit(uri)) {
            // The broker closes the channel for the 404: only the connection is closed here.
            Channel ch = c.createChannel();
            assertThatThrownBy(() -> ch.queueDeclarePassive(deadLetters)).hasStackTraceContaining("NOT_FOUND");
        }
    }

    // ------------------------------------------------------------------ the scenario

    /** Fails while broken, as a handler with a bug does; records what it processed once fixed. */
    static final class Handler implements MessageHandler {
        volatile boolean broken = true;
        final ConcurrentLinkedQueue<Processed> processed = new ConcurrentLinkedQueue<>();

        @Override
        public void handle(Message message, HandlerContext context) {
            if (broken) {
                throw new NonRetryableException("broken until fixed");
            }
            processed.add(new Processed(message.headers().get("message-id"), message.key(), Map.copyOf(message.headers()),
                    message.payloadAsString()));
        }

        List<String> ids() {
            return processed.stream().map(Processed::id).filter(id -> !"probe".equals(id)).sorted().toList();
        }
    }

    record Processed(String id, String key, Map<String, String> headers, String payload) {
    }

    private final class Scenario {
        final String broker;
        final String source;
        final String deadLetters;
        final boolean retained;

        /**
         * @param retained whether dead letters stay in the destination once moved (Kafka)
         */
        Scenario(String broker, String source, String deadLetters, boolean retained) {
            this.broker = broker;
            this.source = source;
            this.deadLetters = deadLetters;
            this.retained = retained;
        }

        void run() throws Exception {
            // One handler run at a time, so the messages are dead-lettered in the order they were sent.
            String config = config(broker + """
                    store: { type: caffeine }
                    runtime: { http: { enabled: false } }
                    pipelines:
                      %s: { source: "%s", concurrency: 1, max-in-flight: 20 }
                    """.formatted(pipeline, source));
            Handler handler = new Handler();
            Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
            try (IdemRuntime runtime = Idem.builder().configFile(Path.of(config)).handler(pipeline, handler)
                    .outcomeListener((p, outcome, m, key) -> outcomes.computeIfAbsent(outcome,
                            o -> new AtomicInteger()).incrementAndGet())
                    .start()) {
                ok(idem("publish", "--config", config, "--count", "5", "--id", "m-", "--key", "k-{n}",
                        "--header", "tenant=acme"));
                await().atMost(WAIT).until(() -> count(outcomes, "dead-lettered") == 5);
                ok(idem("publish", "--config", config, "--to", deadLetters, "--id", "r-1",
                        "--header", "idem-pipeline=refunds", "--header", "idem-dead-letter-cause=handler-failed"));

                Result dry = ok(replay(config, "--dry-run"));
                assertThat(dry.out()).contains("would move m-1  (non-retryable, 1 attempt: ").contains("broken until fixed")
                        .containsSubsequence(IDS.stream().map(id -> "would move " + id).toList())
                        .contains("Dry run: 5 dead letters would move from '" + deadLetters + "' to '" + source
                                + "'; nothing was moved, 1 skipped (1 of other pipelines), 0 failed");

                handler.broken = false;
                Result one = ok(replay(config, "--id", "m-3"));
                assertThat(one.out()).contains("moved      m-3").contains("Moved 1 dead letter from");
                await().atMost(WAIT).until(() -> handler.ids().contains("m-3"));

                Result two = ok(replay(config, "--limit", "2"));
                assertThat(two.out()).containsSubsequence("moved      m-1", "moved      m-2")
                        .contains("Moved 2 dead letters").contains("--limit 2 reached");

                Result rest = ok(replay(config));
                if (retained) {
                    // The group could not move past m-1 while --id left it in place: m-3 is read and copied again.
                    assertThat(rest.out()).containsSubsequence("moved      m-3", "moved      m-4", "moved      m-5")
                            .contains("Moved 3 dead letters");
                    await().atMost(WAIT).until(() -> count(outcomes, "duplicate") == 1);
                } else {
                    assertThat(rest.out()).containsSubsequence("moved      m-4", "moved      m-5")
                            .doesNotContain("m-3").contains("Moved 2 dead letters");
                }
                assertThat(rest.out()).contains("1 skipped (1 of other pipelines), 0 failed");
                await().atMost(WAIT).until(() -> handler.ids().size() == IDS.size());
                assertThat(handler.ids()).as("each message processed exactly once").isEqualTo(IDS);
                assertThat(handler.processed).allSatisfy(p -> {
                    String n = p.id().substring(2);
                    assertThat(p.key()).isEqualTo("k-" + n);
                    assertThat(p.payload()).contains("order-" + n);
                    assertThat(p.headers()).containsEntry("tenant", "acme")
                            .doesNotContainKeys(DlqReplay.DEAD_LETTER_HEADERS.toArray(String[]::new));
                });

                Result last = ok(replay(config, "--dry-run"));
                if (retained) {
                    assertThat(last.out()).contains("No dead letters of pipeline '" + pipeline + "' in '"
                            + deadLetters + "'");
                } else {
                    assertThat(last.out()).contains("Dry run: 0 dead letters would move")
                            .contains("1 skipped (1 of other pipelines)");
                }
            }
        }

        /** {@code idem dlq replay} for the pipeline, ending 1s after the last dead letter where the broker cannot count. */
        Result replay(String config, String... options) {
            List<String> args = new ArrayList<>(List.of("dlq", "replay", "--config", config, "--pipeline", pipeline,
                    "--idle", "1s"));
            args.addAll(List.of(options));
            return idem(args.toArray(String[]::new));
        }
    }

    // ------------------------------------------------------------------ helpers

    record Result(int exitCode, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
        }
    }

    private static Result ok(Result result) {
        assertThat(result.exitCode()).as(result.toString()).isZero();
        return result;
    }

    private static int count(Map<String, AtomicInteger> outcomes, String outcome) {
        AtomicInteger n = outcomes.get(outcome);
        return n == null ? 0 : n.get();
    }

    private static Result idem(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    private String config(String yaml) throws IOException {
        Path file = Files.createTempFile(home, "idem", ".yaml");
        Files.writeString(file, yaml);
        return file.toString();
    }

    private static String rabbitMqUri() {
        return ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F",
                "Start it with: rabbitmq-server -detached", null);
    }

    private static Connection rabbit(String uri) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        return factory.newConnection();
    }
}
