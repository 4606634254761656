package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@link DlqReplay} over the in-memory broker, which reports no backlog: what moves, what stays, and that a run ends
 * on the idle time. The three real brokers are in {@code DlqReplayIT}.
 */
class DlqReplayTest {

    private static final Duration IDLE = Duration.ofMillis(300);
    private static final DlqReplay.Target ORDERS = new DlqReplay.Target("orders", "orders", "orders.DLQ");

    private final InMemoryBroker memory = new InMemoryBroker();
    private final StringWriter output = new StringWriter();

    @AfterEach
    void close() {
        memory.close();
    }

    /** A dead letter as the runtime writes it: the original's key, headers and payload, plus the reason. */
    private static OutboundMessage deadLetter(BrokerAdapter broker, String id, String pipeline) {
        Map<String, String> headers = new HashMap<>(Map.of("message-id", id, "tenant", "acme"));
        headers.putAll(new DeadLetterReason("handler-failed", "boom", 3, pipeline).toHeaders());
        headers.put(DeadLetterReason.ORIGIN_SOURCE, "orders");
        headers.put(DeadLetterReason.ORIGIN_MESSAGE_ID, "broker-" + id);
        return new OutboundMessage(null, "key-" + id, headers, ("{\"id\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8));
    }

    private void deadLetters(String pipeline, String... ids) {
        for (String id : ids) {
            memory.publish("orders.DLQ", deadLetter(memory, id, pipeline));
        }
    }

    private DlqReplay.Report replay(BrokerAdapter broker, Integer limit, Set<String> ids, boolean dryRun) {
        return new DlqReplay(broker, ORDERS, new DlqReplay.Options(limit, ids, dryRun, IDLE),
                m -> m.headers().get("message-id"), new PrintWriter(output, true)).run();
    }

    @Test
    void movesEachDeadLetterBackWithItsOriginalHeadersKeyAndPayloadAndWithoutTheDeadLetterHeaders() {
        deadLetters("orders", "m-1", "m-2");

        DlqReplay.Report report = replay(memory, null, Set.of(), false);

        assertThat(report).isEqualTo(new DlqReplay.Report(2, 0, 0, false));
        List<InboundMessage> moved = memory.drain("orders");
        assertThat(moved).extracting(m -> m.headers().get("message-id")).containsExactly("m-1", "m-2");
        assertThat(moved).allSatisfy(m -> {
            assertThat(m.headers()).containsOnlyKeys("message-id", "tenant");
            assertThat(m.key()).isEqualTo("key-" + m.headers().get("message-id"));
            assertThat(new String(m.payload(), StandardCharsets.UTF_8)).contains(m.headers().get("message-id"));
        });
        assertThat(memory.depth("orders.DLQ")).isZero();
        assertThat(output.toString()).contains("moved      m-1  (handler-failed, 3 attempts: boom)")
                .contains("Moved 2 dead letters from 'orders.DLQ' to 'orders', 0 skipped, 0 failed");
    }

    @Test
    void deadLettersOfAnotherPipelineAndThoseNotMatchingIdStayWhereTheyAre() {
        deadLetters("orders", "m-1", "m-2", "m-3");
        deadLetters("refunds", "r-1");

        DlqReplay.Report report = replay(memory, null, Set.of("m-2", "broker-m-3"), false);

        assertThat(report).isEqualTo(new DlqReplay.Report(2, 2, 0, false));
        assertThat(memory.drain("orders")).extracting(m -> m.headers().get("message-id")).containsExactly("m-2", "m-3");
        assertThat(memory.drain("orders.DLQ")).extracting(m -> m.headers().get("message-id"))
                .containsExactlyInAnyOrder("m-1", "r-1");
        assertThat(output.toString()).contains("2 skipped (1 of other pipelines, 1 not matching --id)");
    }

    @Test
    void aDryRunListsWhatWouldMoveAndLeavesEveryDeadLetterInPlace() {
        deadLetters("orders", "m-1", "m-2");

        DlqReplay.Report report = replay(memory, null, Set.of(), true);

        assertThat(report).isEqualTo(new DlqReplay.Report(2, 0, 0, false));
        assertThat(memory.depth("orders")).isZero();
        assertThat(memory.depth("orders.DLQ")).isEqualTo(2);
        assertThat(output.toString()).contains("would move m-1").contains("would move m-2")
                .contains("Dry run: 2 dead letters would move from 'orders.DLQ' to 'orders'; nothing was moved");
    }

    @Test
    void limitStopsAfterThatManyMoves() {
        deadLetters("orders", "m-1", "m-2", "m-3");

        DlqReplay.Report report = replay(memory, 2, Set.of(), false);

        assertThat(report.moved()).isEqualTo(2);
        assertThat(memory.depth("orders")).isEqualTo(2);
        assertThat(memory.depth("orders.DLQ")).isEqualTo(1);
        assertThat(output.toString()).contains("--limit 2 reached");
    }

    @Test
    void aCopyTheBrokerRefusesLeavesItsDeadLetterInPlaceAndTheOthersMove() {
        deadLetters("orders", "m-1", "m-2", "m-3");
        BrokerAdapter refusing = new Wrapper(memory, (destination, message) -> {
            if ("m-2".equals(message.headers().get("message-id"))) {
                throw new BrokerException("message too large", false);
            }
            memory.publish(destination, message);
        });

        DlqReplay.Report report = replay(refusing, null, Set.of(), false);

        assertThat(report).isEqualTo(new DlqReplay.Report(2, 0, 1, false));
        assertThat(report.ok()).isFalse();
        assertThat(memory.drain("orders.DLQ")).extracting(m -> m.headers().get("message-id")).containsExactly("m-2");
        assertThat(output.toString()).contains("failed     m-2  (not moved, the dead letter stays: message too large)");
    }

    @Test
    void aFailureTheBrokerMayRecoverFromStopsTheRunAndLeavesTheRestInPlace() {
        deadLetters("orders", "m-1", "m-2", "m-3");
        BrokerAdapter unreachable = new Wrapper(memory, (destination, message) -> {
            throw new BrokerException("not confirmed within 30s", true);
        });

        DlqReplay.Report report = replay(unreachable, null, Set.of(), false);

        assertThat(report).isEqualTo(new DlqReplay.Report(0, 0, 1, true));
        assertThat(memory.depth("orders.DLQ")).isEqualTo(3);
        assertThat(output.toString()).contains("stopped at the first failure the broker may recover from");
    }

    /** Regression: a handler that still fails dead-letters the copy again, which must not make the run go round. */
    @Test
    void aMessageDeadLetteredAgainDuringTheRunIsLeftInPlace() {
        deadLetters("orders", "m-1");
        BrokerAdapter stillFailing = new Wrapper(memory, (destination, message) -> {
            Map<String, String> headers = new HashMap<>(message.headers());
            headers.putAll(new DeadLetterReason("handler-failed", "boom again", 1, "orders").toHeaders());
            memory.publish("orders.DLQ", new OutboundMessage(null, message.key(), headers, message.payload()));
        });

        DlqReplay.Report report = replay(stillFailing, null, Set.of(), false);

        assertThat(report).isEqualTo(new DlqReplay.Report(1, 1, 0, false));
        assertThat(memory.depth("orders.DLQ")).isEqualTo(1);
        assertThat(output.toString()).contains("left       m-1  (the same message as one this run moved: dead-lettered again");
    }

    /** Issue 24, item 4: an ID with ESC and BEL repainted the terminal, one with a line break forged a line. */
    @Test
    void idsAndReasonsArePrintedEscapedAsStoreListPrintsThem() {
        String id = "evil\u001b]0;owned\u0007\n  moved      forged";
        Map<String, String> headers = new HashMap<>(Map.of("message-id", id));
        headers.putAll(new DeadLetterReason("handler-failed", "bad \u001b[2Jinput", 1, "orders").toHeaders());
        memory.publish("orders.DLQ", new OutboundMessage(null, "k", headers, "{}".getBytes(StandardCharsets.UTF_8)));

        DlqReplay.Report report = replay(memory, null, Set.of(), false);

        assertThat(report.moved()).isEqualTo(1);
        assertThat(output.toString()).doesNotContain("\u001b").doesNotContain("\u0007")
                .contains("  moved      evil\\u001b]0;owned\\u0007\\n  moved      forged"
                        + "  (handler-failed, 1 attempt: bad \\u001b[2Jinput)");
        assertThat(output.toString().lines().filter(line -> line.startsWith("  moved"))).hasSize(1);
    }

    @Test
    void anEmptyDestinationEndsAfterTheIdleTime() {
        assertThat(replay(memory, null, Set.of(), false)).isEqualTo(new DlqReplay.Report(0, 0, 0, false));
        assertThat(output.toString()).contains("no more dead letters came within 300ms");
    }

    // ------------------------------------------------------------------ --aggregate: one aggregate, in sequence order

    /** The sequence guard of the pipeline: aggregate in header {@code account}, number in header {@code seq}. */
    private static final DlqReplay.Sequence SEQUENCE = new DlqReplay.Sequence(m -> m.headers().get("account"),
            m -> m.headers().get("seq"));

    /** A dead letter of an event: message ID {@code id}, of {@code account}, numbered {@code seq}. */
    private void deadEvent(String id, String account, String seq, String cause, String pipeline) {
        Map<String, String> headers = new HashMap<>(Map.of("message-id", id, "account", account));
        if (seq != null) {
            headers.put("seq", seq);
        }
        headers.putAll(new DeadLetterReason(cause, "event " + seq + " waited", 0, pipeline).toHeaders());
        memory.publish("orders.DLQ", new OutboundMessage(null, account, headers,
                ("{\"id\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8)));
    }

    private DlqReplay.Report replayAggregate(BrokerAdapter broker, String aggregate, String cause, Integer limit,
            boolean dryRun) {
        return new DlqReplay(broker, ORDERS, new DlqReplay.Options(limit, Set.of(), dryRun, IDLE, aggregate, cause),
                m -> m.headers().get("message-id"), SEQUENCE, new PrintWriter(output, true)).run();
    }

    /** Dead letters in the order the guard dead-lettered them, which is not their numbers' order. */
    private void deadEventsOfTwoAccounts() {
        deadEvent("a-5", "a", "5", "sequence-gap", "orders");
        deadEvent("b-1", "b", "1", "sequence-gap", "orders");
        deadEvent("a-3", "a", "3", "sequence-gap", "orders");
        deadEvent("a-10", "a", " 10 ", "handler-failed", "orders");
        deadEvent("a-x", "a", "x7", "invalid-sequence", "orders");
        deadEvent("a-4", "a", "4", "sequence-gap", "orders");
        deadEvent("r-2", "a", "2", "sequence-gap", "refunds");
    }

    @Test
    void aggregateMovesThatAggregatesDeadLettersLowestSequenceNumberFirstAndLeavesTheOthers() {
        deadEventsOfTwoAccounts();

        DlqReplay.Report report = replayAggregate(memory, "a", null, null, false);

        assertThat(report).isEqualTo(new DlqReplay.Report(4, 3, 0, false));
        assertThat(memory.drain("orders")).extracting(m -> m.headers().get("message-id"))
                .containsExactly("a-3", "a-4", "a-5", "a-10");
        assertThat(memory.drain("orders.DLQ")).extracting(m -> m.headers().get("message-id"))
                .containsExactlyInAnyOrder("b-1", "a-x", "r-2");
        String printed = output.toString();
        assertThat(printed).contains("Moving 4 dead letters of aggregate 'a' in sequence order (numbers 3 to 10).")
                .contains("  moved      a-3  (number 3, sequence-gap, 0 attempts: event 3 waited)")
                .contains("  left       a-x  (no sequence number the pipeline's sequence.number extractors can read"
                        + " ('x7'); left in place)")
                .contains("Moved 4 dead letters from 'orders.DLQ' to 'orders', 3 skipped (1 of other pipelines, 1 of"
                        + " other aggregates, 1 without a sequence number), 0 failed");
        assertThat(printed.lines().filter(line -> line.startsWith("  moved")).map(line -> line.split("\\s+")[2]))
                .containsExactly("a-3", "a-4", "a-5", "a-10");
    }

    @Test
    void aggregateWithCauseMovesOnlyTheGapDeadLettersAndADryRunListsThemInOrder() {
        deadEventsOfTwoAccounts();

        DlqReplay.Report dry = replayAggregate(memory, "a", "sequence-gap", null, true);
        assertThat(dry).isEqualTo(new DlqReplay.Report(3, 4, 0, false));
        assertThat(memory.depth("orders")).isZero();
        assertThat(output.toString().lines().filter(line -> line.startsWith("  would move"))
                .map(line -> line.split("\\s+")[3])).containsExactly("a-3", "a-4", "a-5");

        DlqReplay.Report report = replayAggregate(memory, "a", "sequence-gap", null, false);

        assertThat(report).isEqualTo(new DlqReplay.Report(3, 4, 0, false));
        assertThat(memory.drain("orders")).extracting(m -> m.headers().get("message-id"))
                .containsExactly("a-3", "a-4", "a-5");
        assertThat(memory.drain("orders.DLQ")).extracting(m -> m.headers().get("message-id"))
                .containsExactlyInAnyOrder("b-1", "a-10", "a-x", "r-2");
        assertThat(output.toString()).contains("4 skipped (1 of other pipelines, 2 not matching --cause, 1 of other"
                + " aggregates)");
    }

    @Test
    void aggregateWithLimitMovesTheLowestNumbersAndLeavesTheRest() {
        deadEventsOfTwoAccounts();

        DlqReplay.Report report = replayAggregate(memory, "a", "sequence-gap", 2, false);

        assertThat(report.moved()).isEqualTo(2);
        assertThat(memory.drain("orders")).extracting(m -> m.headers().get("message-id"))
                .containsExactly("a-3", "a-4");
        assertThat(memory.drain("orders.DLQ")).extracting(m -> m.headers().get("message-id")).contains("a-5");
        assertThat(output.toString()).contains("Moving 2 dead letters of aggregate 'a' in sequence order (numbers 3"
                + " to 4); --limit 2 leaves 1 in place.").contains("1 of the aggregate not moved")
                .contains("--limit 2 reached");
    }

    @Test
    void aggregateStopsAtTheFirstFailureSoThatNoLaterDeadLetterMovesBeforeIt() {
        deadEventsOfTwoAccounts();
        BrokerAdapter refusing = new Wrapper(memory, (destination, message) -> {
            if ("a-4".equals(message.headers().get("message-id"))) {
                throw new BrokerException("message too large", false);
            }
            memory.publish(destination, message);
        });

        DlqReplay.Report report = replayAggregate(refusing, "a", "sequence-gap", null, false);

        assertThat(report).isEqualTo(new DlqReplay.Report(1, 5, 1, false));
        assertThat(memory.drain("orders")).extracting(m -> m.headers().get("message-id")).containsExactly("a-3");
        assertThat(memory.drain("orders.DLQ")).extracting(m -> m.headers().get("message-id"))
                .contains("a-4", "a-5");
        assertThat(output.toString()).contains("failed     a-4  (not moved, the dead letter stays: message too large)")
                .contains("1 of the aggregate not moved")
                .contains("stopped at the first failure, so that no later dead letter of the aggregate moves"
                        + " before it");
    }

    /** The in-memory broker, publishing through {@code publish}. */
    private record Wrapper(BrokerAdapter broker, BiConsumer<String, OutboundMessage> publish) implements BrokerAdapter {
        @Override
        public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
            return broker.subscribe(request, listener);
        }

        @Override
        public void publish(String destination, OutboundMessage message) {
            publish.accept(destination, message);
        }

        @Override
        public void close() {
        }
    }

    // ------------------------------------------------------------------ the command line

    @TempDir
    Path home;

    private String previousHome;

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

    record Result(int exitCode, String out, String err) {
        /** One line on stderr, no stack trace, exit 2. */
        void isOneLineUsageError(String expected) {
            assertThat(exitCode).as(this.toString()).isEqualTo(Main.INVALID);
            assertThat(err.strip().lines()).as(err).hasSize(1);
            assertThat(err).contains(expected).doesNotContain("at dev.idem").doesNotContain("Unexpected failure");
        }
    }

    private Result idem(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    /** The broker is never contacted: port 1. */
    private String config() throws IOException {
        Path file = home.resolve("idem.yaml");
        Files.writeString(file, """
                broker: {type: activemq, activemq: {url: "tcp://127.0.0.1:1"}}
                store: {type: caffeine}
                pipelines:
                  orders: {source: orders}
                  refunds: {source: refunds}
                  loop: {source: loop, dead-letter: loop}
                """);
        return file.toString();
    }

    @Test
    void usageErrorsAreOneLineBeforeTheBrokerIsContacted() throws IOException {
        String config = config();
        idem("dlq", "replay", "--config", config, "--pipeline", "orders", "--limit", "0")
                .isOneLineUsageError("--limit must be at least 1: 0");
        idem("dlq", "replay", "--config", config, "--pipeline", "orders", "--idle", "soon")
                .isOneLineUsageError("Invalid value for option '--idle': 'soon' must be");
        idem("dlq", "replay", "--config", config)
                .isOneLineUsageError("Say whose dead letters with --pipeline NAME; configured: [orders, refunds, loop]");
        idem("dlq", "replay", "--config", config, "--pipeline", "nosuch")
                .isOneLineUsageError("No pipeline 'nosuch' in the configuration; configured: [orders, refunds, loop]");
        idem("dlq", "replay", "--config", config, "--pipeline", "loop")
                .isOneLineUsageError("Pipeline 'loop' dead-letters to its own source 'loop': there is nothing to move");
    }

    @Test
    void aggregateIsRefusedForAPipelineWithoutASequenceGuard() throws IOException {
        String config = config();
        idem("dlq", "replay", "--config", config, "--pipeline", "orders", "--aggregate", "acc-1")
                .isOneLineUsageError("--aggregate picks the dead letters of one aggregate of the sequence guard, and"
                        + " pipeline 'orders' has none (pipelines.orders.sequence)");
        idem("dlq", "replay", "--config", config, "--pipeline", "orders", "--aggregate", "")
                .isOneLineUsageError("--aggregate needs an aggregate ID");
        idem("dlq", "replay", "--config", config, "--pipeline", "orders", "--cause", " ")
                .isOneLineUsageError("--cause needs a cause, such as sequence-gap");
    }

    @Test
    void dlqAloneNamesItsCommands() {
        Result result = idem("dlq");
        assertThat(result.exitCode()).isEqualTo(Main.INVALID);
        assertThat(result.err()).contains("Missing command: name one of [replay].");
    }
}
