package dev.idem.cli;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.cli.sequence.SequenceHandler;
import dev.idem.testkit.ExternalService;
import jakarta.jms.BytesMessage;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
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
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The acceptance test of the per-aggregate sequence guard ({@code pipelines.<name>.sequence}, issue 11 part 1), end
 * to end with real {@code bin/idem run} processes: {@value #ACCOUNTS} accounts × {@value #EVENTS} events each,
 * published shuffled within windows of {@value #WINDOW}, {@value #REPEAT_PERCENT} % of the published messages repeats
 * (same message ID, half within a few messages of their original, half hundreds to thousands of messages later: 2,500
 * repeats, 12,500 messages), then, once every account's events were applied, one replay per account of an old event
 * under a new message ID. The events of one account come in chunks of {@value #WINDOW} consecutive numbers, the
 * accounts' chunks interleaved in a random order per round, and each chunk shuffled: the in-order stream shuffled
 * within aligned windows of {@value #WINDOW}, so every gap closes within its window and the accounts run in parallel.
 *
 * <p>{@link SequenceHandler} folds each event's amount into its account's balance with an order-sensitive fold
 * ({@code balance = (balance * 31 + amount) mod 1,000,000,007} from 0); the expected balance is the fold of the
 * account's events in number order. What must hold, on Kafka (the embedded KRaft broker, {@value #PARTITIONS}
 * partitions, record key = account), RabbitMQ (the local server, a queue of the test's own) and ActiveMQ (a persistent
 * broker in this JVM), each with both stores:
 * <ul>
 * <li><b>JDBC store on PostgreSQL, transactional mode</b> (the handler writes {@code applied} and {@code balances}
 *     through the store's transaction, in a schema of the test's own): exact, {@code kill -9} mid-stream or not. Every
 *     {@code (account, seq)} applied exactly once (the primary key of {@code applied} would make a second application
 *     fail visibly, and the handler counts such attempts), in number order ({@code applied.n}), the
 *     {@code balances} rows equal to the fold, nothing dead-lettered.</li>
 * <li><b>Redis store, plain mode</b> (the handler appends each application to a file of its process): without a kill
 *     the same exact result. With kills the honest window of plain mode applies (a kill between the handler's effect
 *     and the key's completion re-runs the handler): the handler's effect is deliberately <em>not</em> made
 *     idempotent per {@code (account, seq)}, so that re-runs stay visible and are counted. Asserted then: nothing
 *     lost, every account's applications in number order once consecutive re-runs of the same number are folded
 *     (a re-run can only repeat the number the watermark was waiting to pass; anything else is out of order),
 *     double applications at most {@code max-in-flight} × kills, and the fold of the applications with re-runs folded
 *     once (what a consumer idempotent per {@code (account, seq)} would hold) equal to the expected balance.</li>
 * <li><b>Stale events</b>: each replay (its number below the watermark) must be counted {@code stale} on the
 *     processes' {@code /metrics} and never run (no application carries a replay's message ID). A killed process
 *     loses its counters, so the replays are published after the last kill, once everything settled, and the
 *     increase of the summed {@code stale} counters is compared; without kills the total must be exactly the
 *     replays (the main stream, repeats included, has no stale event: a repeat is a {@code duplicate}).</li>
 * </ul>
 * The {@code kill -9}s (each process restarted at once, as a supervisor would) strike while the stream is consumed:
 * it is published in parts, the first before the processes start, each next one right before a kill, once half of
 * what was published so far is applied; Kafka runs {@value #KAFKA_NODES} processes killed in turn, RabbitMQ and
 * ActiveMQ one consumer (their own order holds for one consumer only). The matrix: Kafka + PostgreSQL transactional
 * (3 kills), Kafka + Redis plain (2 kills), RabbitMQ + PostgreSQL and ActiveMQ + PostgreSQL transactional and
 * ActiveMQ + Redis plain (1 kill each), RabbitMQ + Redis plain without a kill (the exact plain case), and RocketMQ
 * (the embedded name server and broker in a JVM of their own, {@link RocketMqProcess}; {@value #PARTITIONS} queues,
 * {@code KEYS} = account, so one account's events share a queue) + PostgreSQL transactional with
 * {@value #KAFKA_NODES} processes killed in turn (2 kills).
 *
 * <p>Two small cases make the hardest moment of those kills deterministic: an event that waits for its gap, claimed,
 * when its process is killed comes back as a suspect (its key taken over from the dead process), and the events before
 * it, each of which brings it back for another look at the watermark, must not make it poison. Each case prints one
 * {@code [fault]} line. The nodes log one line per outcome to {@code logs/idem.log}; a failed case keeps its
 * directory.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class SequenceGuardIT {

    static final int ACCOUNTS = 60;
    static final int EVENTS = 50;
    static final int WINDOW = 10;
    static final int REPEAT_PERCENT = 20;
    static final int UNIQUE = ACCOUNTS * EVENTS;
    private static final int PARTITIONS = 4;
    private static final int KAFKA_NODES = 2;
    private static final int CONCURRENCY = 8;
    private static final int MAX_IN_FLIGHT = 100;
    private static final Duration TIMEOUT = Duration.ofSeconds(100);
    private static final Duration QUIET = Duration.ofSeconds(2);
    private static final String PIPELINE = "accounts";
    /** More than {@code max-deliveries} (5): the events a suspect's gap holds in the suspect case. */
    private static final int EVENTS_BEFORE_GAP = 9;

    /** Kept when a case fails: its nodes' {@code logs/} and the handler's files tell what happened. */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    // ------------------------------------------------------------------ the matrix

    @Test
    void kafkaWithTransactionalPostgresIsExactWhileProcessesAreKilledInTurn() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        try (KafkaTopic broker = new KafkaTopic(kafka, "seq-accounts-" + run)) {
            postgres(db -> scenario("Kafka (4 partitions, 2 processes) + JDBC (PostgreSQL) transactional", broker, db,
                    KAFKA_NODES, 3, 101));
        }
    }

    @Test
    void kafkaWithPlainRedisLosesNothingAndKeepsOrderWhileProcessesAreKilledInTurn() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        try (KafkaTopic broker = new KafkaTopic(kafka, "seq-accounts-" + run)) {
            scenario("Kafka (4 partitions, 2 processes) + Redis plain", broker, redis(), KAFKA_NODES, 2, 102);
        }
    }

    @Test
    void rocketMqWithTransactionalPostgresIsExactWhileProcessesAreKilledInTurn() throws Exception {
        try (RocketMqTopic broker = new RocketMqTopic(RocketMqProcess.shared(), "seq-accounts-" + run)) {
            postgres(db -> scenario("RocketMQ (4 queues, 2 processes) + JDBC (PostgreSQL) transactional", broker, db,
                    KAFKA_NODES, 2, 107));
        }
    }

    @Test
    void rabbitMqWithTransactionalPostgresIsExactAcrossAKill() throws Exception {
        try (RabbitQueue broker = new RabbitQueue("seq-accounts-" + run)) {
            postgres(db -> scenario("RabbitMQ + JDBC (PostgreSQL) transactional", broker, db, 1, 1, 103));
        }
    }

    @Test
    void rabbitMqWithPlainRedisIsExactWithoutKills() throws Exception {
        try (RabbitQueue broker = new RabbitQueue("seq-accounts-" + run)) {
            scenario("RabbitMQ + Redis plain", broker, redis(), 1, 0, 104);
        }
    }

    @Test
    void activeMqWithTransactionalPostgresIsExactAcrossAKill() throws Exception {
        try (ActiveMqQueue broker = new ActiveMqQueue(dir.resolve("activemq"), "seq-accounts")) {
            postgres(db -> scenario("ActiveMQ + JDBC (PostgreSQL) transactional", broker, db, 1, 1, 105));
        }
    }

    @Test
    void activeMqWithPlainRedisLosesNothingAndKeepsOrderAcrossAKill() throws Exception {
        try (ActiveMqQueue broker = new ActiveMqQueue(dir.resolve("activemq"), "seq-accounts")) {
            scenario("ActiveMQ + Redis plain", broker, redis(), 1, 1, 106);
        }
    }

    // ------------------------------------------------------------------ a suspect waiting for a gap

    @Test
    void aSuspectWaitingForItsGapAfterAKillIsNotPoisonInTransactionalMode() throws Exception {
        try (RabbitQueue broker = new RabbitQueue("seq-suspect-" + run)) {
            postgres(db -> suspectWaitingForItsGap("RabbitMQ + JDBC (PostgreSQL) transactional", broker, db));
        }
    }

    @Test
    void aSuspectWaitingForItsGapAfterAKillIsNotPoisonInPlainMode() throws Exception {
        try (RabbitQueue broker = new RabbitQueue("seq-suspect-" + run)) {
            suspectWaitingForItsGap("RabbitMQ + Redis plain", broker, redis());
        }
    }

    /**
     * The kill of the main cases, made deterministic: event {@value #EVENTS_BEFORE_GAP} + 1 of an account comes
     * alone and waits for its gap, claimed; the process is killed and restarted, and events 1 to
     * {@value #EVENTS_BEFORE_GAP} follow. The waiting event is now a suspect (its key taken over from the dead
     * process), brought back each time one of the events before it completes, and must run once they all did: a
     * gap re-check is no handler start, so it must not count towards {@code max-deliveries} (5, the default).
     */
    private void suspectWaitingForItsGap(String name, Broker broker, Effects effects) throws Exception {
        long started = System.nanoTime();
        Map<String, String> env = Map.of(SequenceHandler.DIR_ENV, dir.resolve("effects").toString(),
                SequenceHandler.TRANSACTIONAL_ENV, Boolean.toString(effects.transactional()));
        List<Event> events = new ArrayList<>();
        for (int seq = 1; seq <= EVENTS_BEFORE_GAP + 1; seq++) {
            events.add(new Event(run + "-" + account(0) + "-" + seq, account(0), seq, amount(0, seq), false));
        }
        try (IdemCluster cluster = new IdemCluster(dir, 1, port -> config(broker, effects, port), env,
                SequenceHandler.class, "sequence-handler.jar")) {
            cluster.nodes.forEach(n -> logOutcomes(n.idem));
            broker.publish(List.of(events.get(EVENTS_BEFORE_GAP)));
            cluster.startAndAwaitServing(TIMEOUT);
            cluster.awaitUntil(() -> cluster.outcome("gap-waited") == 1, () -> "event " + (EVENTS_BEFORE_GAP + 1)
                    + " to wait for its gap", TIMEOUT);
            cluster.node(1).killAndRestart();
            broker.publish(events.subList(0, EVENTS_BEFORE_GAP));
            cluster.awaitUntil(() -> noDeadLetter(cluster) && effects.count() >= events.size(),
                    () -> "every event to be applied (now " + effects.count() + " of " + events.size() + ")", TIMEOUT);
            cluster.awaitQuiet(QUIET, effects::count, TIMEOUT);
            cluster.terminateAll();

            List<Long> applied = effects.applications().stream().map(Application::seq).toList();
            long deadLettered = broker.deadLettered();
            System.out.printf("[fault] sequence guard, a suspect waiting for its gap, %s: event %d waited for its gap,"
                    + " kill -9, then events 1-%d; applied %s; dead-lettered %d; took %ds%n", name,
                    EVENTS_BEFORE_GAP + 1, EVENTS_BEFORE_GAP, applied, deadLettered,
                    IdemCluster.secondsSince(started));
            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(applied).as("the account's applications, in order")
                    .isEqualTo(events.stream().map(e -> (long) e.seq()).toList());
            softly.assertThat(deadLettered).as("dead-lettered messages").isZero();
            softly.assertAll();
        }
    }

    // ------------------------------------------------------------------ the stream

    /** One message: an event of an account, or a repeat of one (same ID), or a replay (new ID, old number). */
    record Event(String id, String account, int seq, long amount, boolean repeat) {
        byte[] payload() {
            return ("{\"account\":\"" + account + "\",\"seq\":" + seq + ",\"amount\":" + amount + "}")
                    .getBytes(StandardCharsets.UTF_8);
        }
    }

    /** What is published: the main stream (unique events and repeats) and the replays. */
    record Plan(List<Event> stream, List<Event> replays, Map<String, Long> expectedBalances) {
        long repeats() {
            return stream.stream().filter(Event::repeat).count();
        }

        Set<String> replayIds() {
            return replays.stream().map(Event::id).collect(Collectors.toUnmodifiableSet());
        }
    }

    static String account(int a) {
        return String.format("acct-%03d", a);
    }

    /** A deterministic amount per (account, seq), from 1 to 1,000,000. */
    static long amount(int a, int seq) {
        long h = (a + 1) * 0x9E3779B97F4A7C15L + seq * 0xC2B2AE3D27D4EB4FL;
        h ^= h >>> 29;
        return 1 + Math.floorMod(h * 0xBF58476D1CE4E5B9L, 1_000_000L);
    }

    Plan plan(long seed) {
        Random random = new Random(seed);
        List<Event> unique = new ArrayList<>(UNIQUE);
        for (int round = 0; round < EVENTS / WINDOW; round++) {
            List<Integer> order = new ArrayList<>();
            for (int a = 0; a < ACCOUNTS; a++) {
                order.add(a);
            }
            Collections.shuffle(order, random);
            for (int a : order) {
                List<Event> chunk = new ArrayList<>(WINDOW);
                for (int seq = round * WINDOW + 1; seq <= (round + 1) * WINDOW; seq++) {
                    chunk.add(new Event(run + "-" + account(a) + "-" + seq, account(a), seq, amount(a, seq), false));
                }
                Collections.shuffle(chunk, random);
                unique.addAll(chunk);
            }
        }
        // Repeats (same ID, same event) after their original: half within 1-20 messages, half from 200 to half the
        // stream later; REPEAT_PERCENT of the published messages, as in the other fault ITs.
        int repeats = UNIQUE * REPEAT_PERCENT / (100 - REPEAT_PERCENT);
        int longestLag = UNIQUE / 2;
        List<List<Event>> after = new ArrayList<>(UNIQUE);
        for (int i = 0; i < UNIQUE; i++) {
            after.add(new ArrayList<>());
        }
        for (int r = 0; r < repeats; r++) {
            int lag = r % 2 == 0 ? 1 + random.nextInt(20) : 200 + random.nextInt(longestLag - 199);
            int original = random.nextInt(UNIQUE - lag);
            Event o = unique.get(original);
            after.get(original + lag).add(new Event(o.id(), o.account(), o.seq(), o.amount(), true));
        }
        List<Event> stream = new ArrayList<>(UNIQUE + repeats);
        for (int i = 0; i < UNIQUE; i++) {
            stream.add(unique.get(i));
            stream.addAll(after.get(i));
        }
        List<Event> replays = new ArrayList<>(ACCOUNTS);
        Map<String, Long> expected = new TreeMap<>();
        for (int a = 0; a < ACCOUNTS; a++) {
            int old = 1 + random.nextInt(EVENTS - 1);
            replays.add(new Event(run + "-replay-" + account(a), account(a), old, amount(a, old), false));
            long balance = 0;
            for (int seq = 1; seq <= EVENTS; seq++) {
                balance = SequenceHandler.fold(balance, amount(a, seq));
            }
            expected.put(account(a), balance);
        }
        Collections.shuffle(replays, random);
        return new Plan(List.copyOf(stream), List.copyOf(replays), expected);
    }

    // ------------------------------------------------------------------ one case

    private void scenario(String name, Broker broker, Effects effects, int nodes, int kills, long seed)
            throws Exception {
        long started = System.nanoTime();
        Plan plan = plan(seed);
        Map<String, String> env = Map.of(SequenceHandler.DIR_ENV, dir.resolve("effects").toString(),
                SequenceHandler.TRANSACTIONAL_ENV, Boolean.toString(effects.transactional()));
        try (IdemCluster cluster = new IdemCluster(dir, nodes, port -> config(broker, effects, port), env,
                SequenceHandler.class, "sequence-handler.jar")) {
            cluster.nodes.forEach(n -> logOutcomes(n.idem));
            // The stream goes out in kills + 1 parts: the first as a backlog before the consumers start, each next
            // one right before a kill, once half of what was published is applied. So every kill strikes while
            // events are consumed, and the last one before the stream's end however fast the machine consumes.
            List<Event> stream = plan.stream();
            int parts = kills + 1;
            broker.publish(stream.subList(0, stream.size() / parts));
            cluster.startAndAwaitServing(TIMEOUT);

            List<Long> killedAt = new ArrayList<>();
            for (int k = 0; k < kills; k++) {
                long threshold = (long) UNIQUE * (k + 1) / parts / 2;
                cluster.awaitUntil(() -> noDeadLetter(cluster) && effects.count() >= threshold,
                        () -> "the kill at " + threshold + " applications (now " + effects.count() + ")", TIMEOUT);
                broker.publish(stream.subList(stream.size() * (k + 1) / parts, stream.size() * (k + 2) / parts));
                killedAt.add(effects.count());
                cluster.node(k % nodes + 1).killAndRestart();
            }
            cluster.awaitUntil(() -> noDeadLetter(cluster) && effects.count() >= UNIQUE,
                    () -> "every event to be applied (now " + effects.count() + " of " + UNIQUE + "; not applied: "
                            + FaultHistory.first(History.of(effects.applications(), plan).lost()) + ")", TIMEOUT);
            cluster.awaitUntil(() -> cluster.nodes.stream().allMatch(IdemCluster.Node::serving),
                    () -> "every process to serve /metrics", TIMEOUT);
            cluster.awaitQuiet(QUIET, effects::count, TIMEOUT);

            // The replays, after the last kill: the increase of the stale counters is theirs.
            long staleBefore = cluster.outcome("stale");
            broker.publish(plan.replays());
            cluster.awaitUntil(() -> cluster.outcome("stale") - staleBefore >= plan.replays().size(),
                    () -> "the replays to be counted stale (now " + (cluster.outcome("stale") - staleBefore) + " of "
                            + plan.replays().size() + ")", TIMEOUT);
            cluster.awaitQuiet(QUIET, effects::count, TIMEOUT);
            long staleCounted = cluster.outcome("stale") - staleBefore;
            long staleTotal = cluster.outcome("stale");
            long processed = cluster.processed();
            long duplicates = cluster.outcome("duplicate");
            long gapWaits = cluster.outcome("gap-waited");
            cluster.terminateAll();

            History history = History.of(effects.applications(), plan);
            long deadLettered = broker.deadLettered();
            int killed = cluster.kills();
            long bound = (long) MAX_IN_FLIGHT * killed;
            boolean exact = effects.transactional() || killed == 0;
            Map<String, Long> balances = effects.transactional() ? effects.balances() : history.balances();
            long balancesRight = plan.expectedBalances().entrySet().stream()
                    .filter(e -> e.getValue().equals(balances.get(e.getKey()))).count();
            long doubles = effects.transactional() ? effects.doubleAttempts() : history.doubleApplications();
            System.out.printf("[fault] sequence guard, %s: published %,d (%,d unique, %,d repeats) + %d replays;"
                    + " stale counted %d of %d replays%s; kills %d%s; applied %,d; lost %d; double applications %d%s;"
                    + " accounts out of order %d; replays run %d; balances equal to the in-order fold %d of %d;"
                    + " dead-lettered %d; took %ds%n", name, plan.stream().size(), UNIQUE, plan.repeats(),
                    plan.replays().size(), staleCounted, plan.replays().size(),
                    killed == 0 ? String.format(" (total %d; processed %,d, duplicates %,d, gap waits %,d)",
                            staleTotal, processed, duplicates, gapWaits) : "",
                    killed, killed == 0 ? "" : " at " + killedAt + " applications", history.applications(),
                    history.lost().size(), doubles, exact ? "" : " (bound " + bound + " = " + MAX_IN_FLIGHT
                            + " in flight x " + killed + " kills)", history.outOfOrder().size(),
                    history.replaysRun(), balancesRight, ACCOUNTS, deadLettered, IdemCluster.secondsSince(started));

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(killed).as("kill -9s").isEqualTo(kills);
            softly.assertThat(killedAt).as("applications when each kill struck: mid-stream")
                    .allMatch(n -> n < UNIQUE);
            softly.assertThat(history.lost().size()).as("events never applied (lost): %s",
                    FaultHistory.first(history.lost())).isZero();
            softly.assertThat(history.unexpected()).as("applications of IDs never published").isEmpty();
            softly.assertThat(history.replaysRun()).as("replays (stale) that ran").isZero();
            softly.assertThat(history.outOfOrder()).as("accounts whose applications are not 1..%d in order"
                    + " (re-runs of one number folded)", EVENTS).isEmpty();
            softly.assertThat(history.wrongAmounts()).as("applications with another amount than published").isZero();
            softly.assertThat(staleCounted).as("the replays counted stale on /metrics").isEqualTo(ACCOUNTS);
            softly.assertThat(deadLettered).as("dead-lettered messages (sequence-gap, invalid-sequence, failures)")
                    .isZero();
            softly.assertThat(balancesRight).as("accounts whose balance equals the in-order fold").isEqualTo(ACCOUNTS);
            if (exact) {
                softly.assertThat(doubles).as("double applications").isZero();
                softly.assertThat(history.applications()).as("applications").isEqualTo(UNIQUE);
            } else {
                softly.assertThat(doubles).as("double applications, at most max-in-flight per kill")
                        .isLessThanOrEqualTo(bound);
            }
            if (killed == 0) {
                softly.assertThat(staleTotal).as("stale events in all (the replays only)").isEqualTo(ACCOUNTS);
                softly.assertThat(processed).as("processed").isEqualTo(UNIQUE);
            }
            softly.assertAll();
        }
    }

    /**
     * True, or fails at once if a current process logged a dead letter (a sequence gap timed out, a poison verdict, a
     * failed run): the stream can then never complete, so the case need not wait for its timeout to say so.
     */
    private static boolean noDeadLetter(IdemCluster cluster) {
        for (IdemCluster.Node node : cluster.nodes) {
            List<String> lines = node.current.log().lines().filter(l -> l.contains("dead-lettering")).toList();
            if (!lines.isEmpty()) {
                throw new AssertionError(lines.size() + " dead letter(s) logged by " + node + " while the stream ran"
                        + " (its logs, one line per outcome in idem.log, are kept in " + node.idem.home.resolve("logs")
                        + "); the first:\n" + String.join("\n", lines.subList(0, Math.min(10, lines.size()))));
            }
        }
        return true;
    }

    /** One line per outcome (the {@code idem.outcome} logger at debug) in the node's {@code logs/idem.log}. */
    private static void logOutcomes(Installation idem) {
        Path logback = idem.home.resolve("conf/logback.xml");
        try {
            String xml = Files.readString(logback);
            String debug = xml.replace("<logger name=\"idem.outcome\" level=\"INFO\"/>",
                    "<logger name=\"idem.outcome\" level=\"DEBUG\"/>");
            if (debug.equals(xml)) {
                throw new AssertionError("conf/logback.xml no longer sets the idem.outcome logger:\n" + xml);
            }
            Files.writeString(logback, debug);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private String config(Broker broker, Effects effects, int port) {
        return broker.config() + effects.config() + """
                pipelines:
                  %s:
                    source: %s
                    handler: %s
                    transactional: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 5s
                    retention: 10m
                    sequence:
                      aggregate: [{type: json-pointer, pointer: /account}]
                      number: [{type: header, name: %s}]
                      gaps: wait
                      gap-timeout: 60s
                      retention: 10m
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(PIPELINE, broker.source(), SequenceHandler.class.getName(), effects.transactional(),
                CONCURRENCY, MAX_IN_FLIGHT, SequenceHandler.SEQ_HEADER, port);
    }

    // ------------------------------------------------------------------ the history

    /** One application of an event, in the order they happened. */
    record Application(String account, long seq, String messageId, long amount) {
    }

    /**
     * The applications read back, judged against the plan.
     *
     * @param perAccount each account's applications in order
     */
    record History(Map<String, List<Application>> perAccount, Plan plan) {

        static History of(List<Application> applications, Plan plan) {
            Map<String, List<Application>> per = new TreeMap<>();
            for (Application a : applications) {
                per.computeIfAbsent(a.account(), k -> new ArrayList<>()).add(a);
            }
            return new History(per, plan);
        }

        long applications() {
            return perAccount.values().stream().mapToLong(List::size).sum();
        }

        /** Each account's numbers in application order, consecutive re-runs of one number folded into one. */
        Map<String, List<Long>> folded() {
            Map<String, List<Long>> out = new TreeMap<>();
            perAccount.forEach((account, apps) -> {
                List<Long> seqs = new ArrayList<>();
                for (Application a : apps) {
                    if (seqs.isEmpty() || seqs.get(seqs.size() - 1) != a.seq()) {
                        seqs.add(a.seq());
                    }
                }
                out.put(account, seqs);
            });
            return out;
        }

        /** Applications beyond the first of each (account, seq). */
        long doubleApplications() {
            return perAccount.values().stream().mapToLong(apps -> apps.size()
                    - apps.stream().map(Application::seq).distinct().count()).sum();
        }

        /** "account seq" of every published event without an application. */
        List<String> lost() {
            List<String> lost = new ArrayList<>();
            for (int a = 0; a < ACCOUNTS; a++) {
                Set<Long> seqs = perAccount.getOrDefault(account(a), List.of()).stream().map(Application::seq)
                        .collect(Collectors.toSet());
                for (long seq = 1; seq <= EVENTS; seq++) {
                    if (!seqs.contains(seq)) {
                        lost.add(account(a) + " " + seq);
                    }
                }
            }
            return lost;
        }

        /** Accounts whose folded numbers are not exactly 1..EVENTS, with them. */
        Map<String, List<Long>> outOfOrder() {
            List<Long> inOrder = new ArrayList<>();
            for (long seq = 1; seq <= EVENTS; seq++) {
                inOrder.add(seq);
            }
            Map<String, List<Long>> wrong = new TreeMap<>();
            folded().forEach((account, seqs) -> {
                if (!seqs.equals(inOrder)) {
                    wrong.put(account, seqs);
                }
            });
            return wrong;
        }

        long replaysRun() {
            Set<String> replays = plan.replayIds();
            return perAccount.values().stream().flatMap(List::stream).filter(a -> replays.contains(a.messageId()))
                    .count();
        }

        List<String> unexpected() {
            return perAccount.keySet().stream().filter(a -> !plan.expectedBalances().containsKey(a)).toList();
        }

        long wrongAmounts() {
            return perAccount.values().stream().flatMap(List::stream).filter(a -> a.amount()
                    != amount(Integer.parseInt(a.account().substring(5)), (int) a.seq())).count();
        }

        /** The balances folded from the applications, consecutive re-runs of one number folded once. */
        Map<String, Long> balances() {
            Map<String, Long> balances = new TreeMap<>();
            perAccount.forEach((account, apps) -> {
                long balance = 0;
                long last = -1;
                for (Application a : apps) {
                    if (a.seq() != last) {
                        balance = SequenceHandler.fold(balance, a.amount());
                        last = a.seq();
                    }
                }
                balances.put(account, balance);
            });
            return balances;
        }
    }

    // ------------------------------------------------------------------ stores and where the effects are

    /** The store's configuration and the handler's effects, read back. */
    private interface Effects {
        boolean transactional();

        String config();

        /** Applications so far (cheap: polled). */
        long count();

        /** Every application, in the order they happened. */
        List<Application> applications();

        /** Transactional mode: the balances table. */
        Map<String, Long> balances();

        /** Transactional mode: runs that found their (account, seq) applied already. */
        long doubleAttempts();
    }

    private interface PostgresCase {
        void run(Effects effects) throws Exception;
    }

    /** The JDBC store on PostgreSQL in a schema of this case's own (dropped after), with the handler's tables. */
    private void postgres(PostgresCase body) throws Exception {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_seq_" + run;
        String jdbc = url + "?user=postgres&currentSchema=" + schema;
        sql(url + "?user=postgres", "CREATE SCHEMA " + schema);
        try {
            sql(jdbc, "CREATE TABLE applied (n BIGSERIAL NOT NULL, account VARCHAR(32) NOT NULL, seq BIGINT NOT NULL,"
                    + " message_id VARCHAR(128) NOT NULL, amount BIGINT NOT NULL, pid BIGINT NOT NULL,"
                    + " PRIMARY KEY (account, seq))");
            sql(jdbc, "CREATE TABLE balances (account VARCHAR(32) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL,"
                    + " last_seq BIGINT NOT NULL)");
            Path doubles = dir.resolve("effects");
            body.run(new Effects() {
                @Override
                public boolean transactional() {
                    return true;
                }

                @Override
                public String config() {
                    return """
                            store:
                              type: jdbc
                              jdbc: { url: "%s?currentSchema=%s", username: postgres }
                            """.formatted(url, schema);
                }

                @Override
                public long count() {
                    return query(jdbc, "SELECT COUNT(*) FROM applied", rs -> rs.getLong(1)).get(0);
                }

                @Override
                public List<Application> applications() {
                    return query(jdbc, "SELECT account, seq, message_id, amount FROM applied ORDER BY n",
                            rs -> new Application(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getLong(4)));
                }

                @Override
                public Map<String, Long> balances() {
                    Map<String, Long> balances = new TreeMap<>();
                    query(jdbc, "SELECT account, balance FROM balances", rs -> balances.put(rs.getString(1),
                            rs.getLong(2)));
                    return balances;
                }

                @Override
                public long doubleAttempts() {
                    return lines(doubles, "doubles-").size();
                }
            });
        } finally {
            sql(url + "?user=postgres", "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    /** The Redis store under a key prefix of this case's own; the effects are the handler's files. */
    private Effects redis() {
        String uri = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        Path files = dir.resolve("effects");
        return new Effects() {
            @Override
            public boolean transactional() {
                return false;
            }

            @Override
            public String config() {
                return """
                        store:
                          type: redis
                          redis: { uri: "%s", key-prefix: "idem-seq-%s:" }
                        """.formatted(uri, run);
            }

            @Override
            public long count() {
                return lines(files, "applied-").size();
            }

            /** The lines of every process, ordered by their time (microseconds), then by file order. */
            @Override
            public List<Application> applications() {
                record Line(long micros, int index, Application application) {
                }
                List<String[]> fields = lines(files, "applied-").stream().map(l -> l.split("\t")).toList();
                List<Line> lines = new ArrayList<>();
                for (int i = 0; i < fields.size(); i++) {
                    String[] f = fields.get(i);
                    lines.add(new Line(Long.parseLong(f[5]), i, new Application(f[0], Long.parseLong(f[1]), f[3],
                            Long.parseLong(f[2]))));
                }
                lines.sort(Comparator.comparingLong(Line::micros).thenComparingInt(Line::index));
                return lines.stream().map(Line::application).toList();
            }

            @Override
            public Map<String, Long> balances() {
                throw new UnsupportedOperationException("plain mode: the balances are folded from the applications");
            }

            @Override
            public long doubleAttempts() {
                throw new UnsupportedOperationException("plain mode: the double applications are in the history");
            }
        };
    }

    /** The complete lines of the files {@code <prefix>*.log} in {@code dir}, file after file. */
    private static List<String> lines(Path dir, String prefix) {
        List<String> lines = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return lines;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith(prefix)).sorted().toList()) {
                String text = Files.readString(file, StandardCharsets.UTF_8);
                for (String line : text.substring(0, text.lastIndexOf('\n') + 1).split("\n")) {
                    if (!line.isEmpty()) {
                        lines.add(line);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Reading " + prefix + "*.log in " + dir, e);
        }
        return lines;
    }

    private interface Row<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private static <T> List<T> query(String url, String query, Row<T> row) {
        List<T> rows = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            while (rs.next()) {
                rows.add(row.read(rs));
            }
        } catch (SQLException e) {
            throw new AssertionError(query + " failed: " + e, e);
        }
        return rows;
    }

    private static void sql(String url, String statement) {
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            s.execute(statement);
        } catch (SQLException e) {
            throw new AssertionError(statement + " failed: " + e, e);
        }
    }

    // ------------------------------------------------------------------ brokers

    /** A destination of this case's own: its configuration, publishing to it, and its dead letters. */
    private interface Broker extends AutoCloseable {
        String config();

        String source();

        /** Publishes in list order, every message confirmed by the broker before it returns. */
        void publish(List<Event> events) throws Exception;

        /** Messages in the destination's dead-letter destinations. */
        long deadLettered() throws Exception;
    }

    /** A topic of {@value #PARTITIONS} partitions on the embedded Kafka; the record key is the account. */
    private final class KafkaTopic implements Broker {
        private final EmbeddedKafka kafka;
        private final String topic;

        KafkaTopic(EmbeddedKafka kafka, String topic) {
            this.kafka = kafka;
            this.topic = topic;
            kafka.createTopic(topic, PARTITIONS);
        }

        /** A short session timeout, so the group notices a killed member quickly. */
        @Override
        public String config() {
            return """
                    broker:
                      type: kafka
                      kafka:
                        bootstrap-servers: %s
                        group-id-prefix: "seq-%s-"
                        client: { session.timeout.ms: 6000, heartbeat.interval.ms: 1000 }
                    """.formatted(kafka.bootstrapServers(), run);
        }

        @Override
        public String source() {
            return topic;
        }

        @Override
        public void publish(List<Event> events) {
            Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                    ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                    ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.CLIENT_ID_CONFIG, "seq-stream",
                    ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                    ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            AtomicReference<Exception> failure = new AtomicReference<>();
            AtomicInteger acknowledged = new AtomicInteger();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
                for (Event e : events) {
                    RecordHeaders headers = new RecordHeaders();
                    headers.add("message-id", e.id().getBytes(StandardCharsets.UTF_8));
                    headers.add(SequenceHandler.SEQ_HEADER, Integer.toString(e.seq()).getBytes(StandardCharsets.UTF_8));
                    producer.send(new ProducerRecord<>(topic, null, e.account().getBytes(StandardCharsets.UTF_8),
                            e.payload(), headers), (metadata, x) -> {
                                if (x != null) {
                                    failure.compareAndSet(null, x);
                                } else {
                                    acknowledged.incrementAndGet();
                                }
                            });
                }
                producer.flush();
            }
            if (failure.get() != null || acknowledged.get() != events.size()) {
                throw new IllegalStateException("Kafka acknowledged " + acknowledged.get() + " of " + events.size()
                        + " record(s) sent to '" + topic + "'", failure.get());
            }
        }

        /** The records of {@code <topic>.DLQ}, if it exists. */
        @Override
        public long deadLettered() throws Exception {
            Admin admin = kafka.admin();
            String dlq = topic + ".DLQ";
            if (!admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(dlq)) {
                return 0;
            }
            int partitions = admin.describeTopics(List.of(dlq)).allTopicNames().get(30, TimeUnit.SECONDS).get(dlq)
                    .partitions().size();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(dlq, p), OffsetSpec.latest());
            }
            return admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
                    .mapToLong(o -> o.offset()).sum();
        }

        @Override
        public void close() {
            kafka.deleteTopic(topic);
            kafka.deleteTopic(topic + ".DLQ");
        }
    }

    /**
     * A topic of {@value #PARTITIONS} queues on the embedded RocketMQ, with a consumer group of this case's own; an
     * event's key ({@code KEYS}) is its account, which picks its queue. Deleted after, with its {@code -DLQ} topic.
     */
    private final class RocketMqTopic implements Broker {
        private final RocketMqProcess rocketMq;
        private final String topic;

        RocketMqTopic(RocketMqProcess rocketMq, String topic) {
            this.rocketMq = rocketMq;
            this.topic = topic;
            rocketMq.createTopic(topic, PARTITIONS);
        }

        @Override
        public String config() {
            return rocketMq.brokerConfig("seq-" + run + "-");
        }

        @Override
        public String source() {
            return topic;
        }

        @Override
        public void publish(List<Event> events) {
            rocketMq.publish(topic, events.stream().map(e -> new RocketMqProcess.Message(e.account(), e.payload(),
                    Map.of("message-id", e.id(), SequenceHandler.SEQ_HEADER, Integer.toString(e.seq())))).toList());
        }

        /** The messages of {@code <topic>-DLQ}, where they stay; none if it does not exist. */
        @Override
        public long deadLettered() {
            return rocketMq.messages(topic + "-DLQ").size();
        }

        @Override
        public void close() {
            rocketMq.deleteTopic(topic);
            rocketMq.deleteTopic(topic + "-DLQ");
        }
    }

    /** A queue of this case's own on the local RabbitMQ (default virtual host), deleted after with its DLQ. */
    private static final class RabbitQueue implements Broker {
        private final String uri = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2F", "Start it with: rabbitmq-server -detached", null);
        private final String queue;

        RabbitQueue(String queue) throws Exception {
            this.queue = queue;
            // Declared as the adapter declares it (durable, classic), so the backlog waits before idem runs.
            rabbit(channel -> channel.queueDeclare(queue, true, false, false, null));
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
        public void publish(List<Event> events) throws Exception {
            rabbit(channel -> {
                channel.confirmSelect();
                for (Event e : events) {
                    Map<String, Object> headers = new LinkedHashMap<>();
                    headers.put("message-id", e.id());
                    headers.put(SequenceHandler.SEQ_HEADER, Integer.toString(e.seq()));
                    channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().deliveryMode(2)
                            .messageId(e.id()).headers(headers).build(), e.payload());
                }
                channel.waitForConfirmsOrDie(60_000);
                return null;
            });
        }

        @Override
        public long deadLettered() throws Exception {
            try {
                return rabbit(channel -> channel.queueDeclarePassive(queue + ".DLQ").getMessageCount());
            } catch (IOException e) {
                return 0; // no dead-letter queue: nothing was dead-lettered
            }
        }

        private interface ChannelWork<T> {
            T apply(Channel channel) throws Exception;
        }

        private <T> T rabbit(ChannelWork<T> work) throws Exception {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(uri);
            try (com.rabbitmq.client.Connection connection = factory.newConnection("idem-sequence-it");
                    Channel channel = connection.createChannel()) {
                return work.apply(channel);
            }
        }

        @Override
        public void close() throws Exception {
            rabbit(channel -> {
                channel.queueDelete(queue);
                channel.queueDelete(queue + ".DLQ");
                return null;
            });
        }
    }

    /** A queue on a persistent ActiveMQ broker in this JVM ({@link BrokerConnectionLossIT.ActiveMq}). */
    private static final class ActiveMqQueue implements Broker {
        private final int port = Installation.freePort();
        private final BrokerConnectionLossIT.ActiveMq broker;
        private final String queue;

        ActiveMqQueue(Path data, String queue) throws Exception {
            this.queue = queue;
            broker = new BrokerConnectionLossIT.ActiveMq(data.toFile(), port);
            broker.start();
        }

        @Override
        public String config() {
            return """
                    broker:
                      type: activemq
                      activemq:
                        url: "tcp://127.0.0.1:%d"
                    """.formatted(port);
        }

        @Override
        public String source() {
            return queue;
        }

        /** In transactions of 500 messages: sends in a transaction need no confirmation each, the commit confirms. */
        @Override
        public void publish(List<Event> events) throws Exception {
            ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + port);
            try (jakarta.jms.Connection connection = factory.createConnection();
                    Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
                    MessageProducer producer = session.createProducer(session.createQueue(queue))) {
                int inTransaction = 0;
                for (Event e : events) {
                    BytesMessage m = session.createBytesMessage();
                    m.writeBytes(e.payload());
                    m.setStringProperty("message-id", e.id());
                    m.setStringProperty(SequenceHandler.SEQ_HEADER, Integer.toString(e.seq()));
                    m.setStringProperty("JMSXGroupID", e.account());
                    producer.send(m);
                    if (++inTransaction == 500) {
                        session.commit();
                        inTransaction = 0;
                    }
                }
                session.commit();
            }
        }

        @Override
        public long deadLettered() throws Exception {
            return broker.depth(queue + ".DLQ") + broker.depth("ActiveMQ.DLQ");
        }

        @Override
        public void close() throws Exception {
            broker.close();
        }
    }
}
