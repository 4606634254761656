package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.StageFixture.delivery;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@link Sequences} on its own: finding each event's aggregate and number (or rejecting it as
 * {@code invalid-sequence}), and, before it runs, comparing its number with the aggregate's watermark in the
 * Caffeine store: stale, next, or set aside until {@code sequence.gap-timeout} and then dead-lettered as
 * {@code sequence-gap}; and the bookkeeping behind its gauges: events and aggregates waiting for a gap, and
 * aggregates blocked by a {@code sequence-gap} dead letter.
 */
class SequencesTest {

    private static final String SEQUENCE = """
            sequence:
              aggregate:
                - type: header
                  name: aggregate
              number:
                - type: header
                  name: seq
              gap-timeout: 10s
            """;

    /** The aggregate from header {@code aggregate}; a message with header {@code unreadable} cannot be read. */
    private static final IdExtractor AGGREGATE = m -> {
        if (m.headers().containsKey("unreadable")) {
            throw new IllegalArgumentException("the payload is not JSON");
        }
        return m.headers().get("aggregate");
    };
    private static final IdExtractor NUMBER = m -> m.headers().get("seq");

    private StageFixture f;
    private Sequences sequences;

    private final Logger sequencesLog = (Logger) LoggerFactory.getLogger(Sequences.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @AfterEach
    void close() {
        sequencesLog.detachAppender(logged);
        if (f != null) {
            f.close();
        }
    }

    private Sequences sequences(String extra) {
        return sequences(extra, Sequences.MAX_BLOCKED);
    }

    private Sequences sequences(String extra, int maxBlocked) {
        f = new StageFixture(SEQUENCE + extra);
        sequences = new Sequences(f.state, f.storeCalls, f.outcomes, f.settlement, List.of(AGGREGATE),
                List.of(NUMBER), maxBlocked);
        f.metrics.watchSequences(sequences);
        logged.start();
        sequencesLog.addAppender(logged);
        return sequences;
    }

    /** {@code idem.sequence.*{pipeline=orders}} as a scrape reads it. */
    private double gauge(String name) {
        Gauge gauge = f.meters.find(name).tag("pipeline", "orders").gauge();
        assertThat(gauge).as(name).isNotNull();
        return gauge.value();
    }

    private double blockedOverflow() {
        FunctionCounter counter = f.meters.find(PipelineMetrics.SEQUENCE_BLOCKED_OVERFLOW).tag("pipeline", "orders")
                .functionCounter();
        assertThat(counter).isNotNull();
        return counter.count();
    }

    private List<String> warnings() {
        return logged.list.stream().filter(e -> e.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage)
                .filter(m -> m.contains("is blocked")).toList();
    }

    /** Sets {@code w} aside, lets its gap timeout pass and dead-letters it as {@code sequence-gap}. */
    private void deadLetterAsGap(Work w) {
        assertThat(sequences.check(w).kind()).isEqualTo(Step.Kind.SET_ASIDE);
        f.ticker.advance(Duration.ofSeconds(10));
        assertThat(sequences.check(w)).isEqualTo(Step.NEXT);
        assertThat(delivery(w).settlements).containsExactly("deadLetter(sequence-gap)");
    }

    private Work event(String aggregate, String number) {
        Map<String, String> headers = new HashMap<>();
        if (aggregate != null) {
            headers.put("aggregate", aggregate);
        }
        if (number != null) {
            headers.put("seq", number);
        }
        return f.work(aggregate + "-" + number, "p", headers);
    }

    /** An event resolved at intake and claimed, as it is when it comes to run. */
    private Work claimedEvent(String aggregate, long number) {
        Work w = event(aggregate, Long.toString(number));
        sequences.resolve(w);
        assertThat(w.rejectCause).isNull();
        f.acquire(w);
        return w;
    }

    @Test
    void anEventWithAnAggregateAndANumberIsResolved() {
        sequences("");
        Work w = event("acc-1", "7");

        sequences.resolve(w);

        assertThat(w.rejectCause).isNull();
        assertThat(w.aggregate).isEqualTo(new StoreKey("orders", "acc-1"));
        assertThat(w.sequenceNumber).isEqualTo(7);

        Work padded = event("acc-1", " 0042 ");
        sequences.resolve(padded);
        assertThat(padded.sequenceNumber).isEqualTo(42);
    }

    @Test
    void anEventWithoutAValidAggregateIsAnInvalidSequence() {
        sequences("");
        Map<Work, String> expected = new LinkedHashMap<>();
        expected.put(event(null, "1"), "no aggregate ID found");
        expected.put(event("", "1"), "no aggregate ID found");
        expected.put(event("acc\n1", "1"), "aggregate ID holds a control character");
        Work unreadable = f.work("u", "p", Map.of("unreadable", "yes", "seq", "1"));
        expected.put(unreadable, "the sequence could not be read: the payload is not JSON");

        expected.forEach((w, detail) -> {
            sequences.resolve(w);
            assertThat(w.rejectCause).as(w.message.headers().toString()).isEqualTo(Sequences.INVALID)
                    .isEqualTo("invalid-sequence");
            assertThat(w.rejectDetail).as(w.message.headers().toString()).contains(detail);
            assertThat(w.aggregate).isNull();
        });
    }

    @Test
    void anEventWithoutAValidNumberIsAnInvalidSequence() {
        sequences("");
        Work missing = event("acc-1", null);
        sequences.resolve(missing);
        assertThat(missing.rejectCause).isEqualTo("invalid-sequence");
        assertThat(missing.rejectDetail).contains("no sequence number found");

        for (String number : List.of("0", "-3", "1.5", "x7", "+7", "", "9223372036854775808",
                "99999999999999999999")) {
            Work w = event("acc-1", number);
            sequences.resolve(w);
            assertThat(w.rejectCause).as("number '%s'", number).isEqualTo("invalid-sequence");
            assertThat(w.rejectDetail).as("number '%s'", number)
                    .satisfiesAnyOf(d -> assertThat(d).contains("is not a decimal number from 1"),
                            d -> assertThat(d).contains("no sequence number found"));
            assertThat(w.aggregate).isNull();
        }
        Work largest = event("acc-1", "9223372036854775807");
        sequences.resolve(largest);
        assertThat(largest.rejectCause).isNull();
        assertThat(largest.sequenceNumber).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void anEventAtOrBelowTheWatermarkIsAckedAsStaleAndItsClaimReleased() {
        sequences("");
        f.watermark("acc-1", 3);
        Work older = claimedEvent("acc-1", 2);
        Work same = claimedEvent("acc-1", 3);

        assertThat(sequences.check(older)).isEqualTo(Step.NEXT);
        assertThat(sequences.check(same)).isEqualTo(Step.NEXT);

        for (Work w : List.of(older, same)) {
            assertThat(delivery(w).settlements).containsExactly("ack");
            assertThat(w.claim.held()).isFalse();
            assertThat(f.events).containsSubsequence("release " + w.key, "ack " + w.key);
            assertThat(f.claimInStore(f.work(w.key, "p"))).as("released, not completed")
                    .isInstanceOf(ClaimResult.Acquired.class);
        }
        assertThat(f.count("stale")).isEqualTo(2);
        assertThat(f.store.real.watermark(new StoreKey("orders", "acc-1"))).isEqualTo(3);
    }

    @Test
    void theNextNumberRuns() {
        sequences("");
        f.watermark("acc-1", 3);
        Work next = claimedEvent("acc-1", 4);
        Work first = claimedEvent("acc-new", 1);

        assertThat(sequences.check(next)).isNull();
        assertThat(sequences.check(first)).as("an aggregate never seen starts at 1").isNull();

        assertThat(delivery(next).settled()).isFalse();
        assertThat(next.claim.held()).isTrue();
        assertThat(f.count("gap-waited")).isZero();
        assertThat(f.state.advanceOf(next).number()).as("its completion raises the watermark to it").isEqualTo(4);
    }

    @Test
    void aLaterNumberIsSetAsideUntilTheGapTimeoutThenDeadLetteredNamingTheMissingNumber() {
        sequences("");
        f.watermark("acc-1", 2);
        Work w = claimedEvent("acc-1", 4);

        Step first = sequences.check(w);
        assertThat(first.kind()).isEqualTo(Step.Kind.SET_ASIDE);
        assertThat(first.parkNanos()).isEqualTo(TimeUnit.SECONDS.toNanos(10));
        assertThat(f.count("gap-waited")).isEqualTo(1);

        f.ticker.advance(Duration.ofSeconds(4));
        Step again = sequences.check(w);
        assertThat(again.kind()).isEqualTo(Step.Kind.SET_ASIDE);
        assertThat(again.parkNanos()).as("what is left of its wait").isEqualTo(TimeUnit.SECONDS.toNanos(6));
        assertThat(f.count("gap-waited")).as("counted once").isEqualTo(1);
        assertThat(delivery(w).settled()).isFalse();

        f.ticker.advance(Duration.ofSeconds(6));
        assertThat(sequences.check(w)).isEqualTo(Step.NEXT);

        assertThat(delivery(w).settlements).containsExactly("deadLetter(sequence-gap)");
        assertThat(delivery(w).deadLetter.detail()).contains("event 4 of aggregate 'acc-1'")
                .contains("for number 3,").contains("10s");
        assertThat(f.events).containsSubsequence("release " + w.key, "deadLetter " + w.key);
        assertThat(f.count("dead-lettered")).isEqualTo(1);
        assertThat(f.count("gap-waited")).isEqualTo(1);
    }

    @Test
    void aSequenceGapOfSeveralNumbersNamesTheirRange() {
        sequences("");
        f.watermark("acc-1", 2);
        Work w = claimedEvent("acc-1", 6);
        sequences.check(w);

        f.ticker.advance(Duration.ofSeconds(10));
        assertThat(sequences.check(w)).isEqualTo(Step.NEXT);

        assertThat(delivery(w).deadLetter.cause()).isEqualTo("sequence-gap");
        assertThat(delivery(w).deadLetter.detail()).contains("for numbers 3 to 5,");
    }

    /**
     * Regression: in transactional mode the run's transaction sees the gap and says only that (watermark -1); the
     * dead letter said "the numbers before 6". The watermark is read before dead-lettering, to name them.
     */
    @Test
    void aGapSeenByATransactionNamesTheMissingNumbersFromTheStoresWatermark() {
        sequences("");
        f.watermark("acc-1", 2);
        Work w = claimedEvent("acc-1", 6);
        Work single = claimedEvent("acc-2", 3);
        f.watermark("acc-2", 1);

        assertThat(sequences.gap(w, -1).kind()).isEqualTo(Step.Kind.SET_ASIDE);
        assertThat(sequences.gap(single, -1).kind()).isEqualTo(Step.Kind.SET_ASIDE);
        f.ticker.advance(Duration.ofSeconds(10));
        assertThat(sequences.gap(w, -1)).isEqualTo(Step.NEXT);
        assertThat(sequences.gap(single, -1)).isEqualTo(Step.NEXT);

        assertThat(delivery(w).settlements).containsExactly("deadLetter(sequence-gap)");
        assertThat(delivery(w).deadLetter.detail()).isEqualTo("event 6 of aggregate 'acc-1' waited 10s"
                + " (sequence.gap-timeout) for numbers 3 to 5, which did not come");
        assertThat(delivery(single).deadLetter.detail()).contains("for number 2,");
    }

    @Test
    void aGapSeenByATransactionThatClosedSinceRunsAgainRatherThanBeingDeadLettered() {
        sequences("");
        f.watermark("acc-1", 2);
        Work w = claimedEvent("acc-1", 4);
        sequences.gap(w, -1);

        f.watermark("acc-1", 3);
        f.ticker.advance(Duration.ofSeconds(10));
        assertThat(sequences.gap(w, -1)).isEqualTo(Step.park(0));

        assertThat(delivery(w).settled()).isFalse();
        assertThat(w.claim.held()).isTrue();
    }

    @Test
    void aGapSeenByATransactionWhoseWatermarkCannotBeReadIsHandedBackNotDeadLettered() {
        sequences("");
        Work w = claimedEvent("acc-1", 4);
        sequences.gap(w, -1);
        f.ticker.advance(Duration.ofSeconds(10));
        f.store.fail("watermark", 1);

        assertThat(sequences.gap(w, -1)).isEqualTo(Step.HANDED_BACK);

        assertThat(delivery(w).settlements).containsExactly("retryLater(" + StoreCalls.BACKOFF_MAX + ")");
        assertThat(f.count("store-unavailable")).isEqualTo(1);
        assertThat(f.count("dead-lettered")).isZero();
    }

    @Test
    void aLaterNumberRunsAtOnceWhenGapsAreAccepted() {
        sequences("  gaps: accept\n");
        f.watermark("acc-1", 2);
        Work w = claimedEvent("acc-1", 6);

        assertThat(sequences.check(w)).isNull();
        assertThat(f.count("gap-waited")).isZero();
        assertThat(sequences.waitsForGaps()).isFalse();
    }

    @Test
    void anEventWhoseWatermarkCannotBeReadIsHandedBack() {
        sequences("");
        Work w = claimedEvent("acc-1", 1);
        f.store.fail("watermark", 1);

        assertThat(sequences.check(w)).isEqualTo(Step.HANDED_BACK);

        assertThat(delivery(w).settlements).containsExactly("retryLater(" + StoreCalls.BACKOFF_MAX + ")");
        assertThat(f.count("store-unavailable")).isEqualTo(1);
        assertThat(w.claim.held()).as("kept until its lease ends").isTrue();
    }

    @Test
    void theWaitingGaugesCountTheEventsSetAsideAndTheirAggregatesUntilTheyComeBack() {
        sequences("");
        f.watermark("acc-1", 2);
        Work four = claimedEvent("acc-1", 4);
        Work five = claimedEvent("acc-1", 5);
        Work other = claimedEvent("acc-2", 3);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isZero();

        for (Work w : List.of(four, five, other)) {
            assertThat(sequences.check(w).kind()).isEqualTo(Step.Kind.SET_ASIDE);
        }
        assertThat(sequences.check(four).kind()).as("again: counted once").isEqualTo(Step.Kind.SET_ASIDE);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isEqualTo(3);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isEqualTo(2);

        f.watermark("acc-1", 3);
        assertThat(sequences.check(four)).as("its gap closed: it runs").isNull();
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isEqualTo(2);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isEqualTo(2);

        // Handed back while set aside (behind an earlier event of its aggregate, or when stopping): not counted.
        f.settlement.abandon(other);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isEqualTo(1);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isEqualTo(1);

        f.ticker.advance(Duration.ofSeconds(10));
        assertThat(sequences.check(five)).as("dead-lettered after its timeout").isEqualTo(Step.NEXT);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isZero();
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isZero();
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).as("dead-lettered with the watermark at 3").isEqualTo(1);
    }

    @Test
    void eventsSettledWhileSetAsideAreSweptSoTheBookkeepingStaysBounded() {
        sequences("");
        f.watermark("acc-1", 1);
        for (int round = 0; round < 10; round++) {
            for (int i = 0; i < 50; i++) {
                Work w = claimedEvent("acc-" + round + "-" + i, 2 + round);
                assertThat(sequences.check(w).kind()).isEqualTo(Step.Kind.SET_ASIDE);
                f.settlement.abandon(w);
            }
        }
        Work stillWaiting = claimedEvent("acc-1", 3);
        sequences.check(stillWaiting);

        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isEqualTo(1);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isEqualTo(1);
        assertThat(sequences.setAsideHeld()).as("500 were set aside and handed back").isLessThanOrEqualTo(2 * 64 + 1);
    }

    @Test
    void anAggregateWithAGapDeadLetterIsBlockedUntilAnEventAtOrPastItRunsAndTheFirstTimeIsLoggedWithTheCommand() {
        sequences("");
        f.watermark("acc-1", 2);
        f.watermark("acc-2", 1);
        Work four = claimedEvent("acc-1", 4);
        deadLetterAsGap(four);

        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(1);
        assertThat(warnings()).containsExactly("Pipeline 'orders': aggregate 'acc-1' is blocked: its event 4 was"
                + " dead-lettered as sequence-gap while its watermark was 2, so each later event of it will wait"
                + " sequence.gap-timeout (10s) and be dead-lettered too. Once number 3 came (a late event runs when it"
                + " comes) or if it is among the dead letters, heal it by replaying its dead letters in sequence"
                + " order: idem dlq replay --pipeline orders --aggregate acc-1");

        // Its later event waits for 3 and follows; still one aggregate, logged once.
        Work five = claimedEvent("acc-1", 5);
        deadLetterAsGap(five);
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(1);
        assertThat(warnings()).hasSize(1);

        // Another aggregate's gap dead letter blocks it too; a stale event or the late 3 of acc-1 does not heal it.
        deadLetterAsGap(claimedEvent("acc-2", 5));
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(2);
        assertThat(warnings()).hasSize(2);
        assertThat(warnings().get(1)).contains("aggregate 'acc-2'", "numbers 2 to 4",
                "idem dlq replay --pipeline orders --aggregate acc-2");
        assertThat(sequences.check(claimedEvent("acc-1", 2))).as("stale").isEqualTo(Step.NEXT);
        assertThat(sequences.check(claimedEvent("acc-1", 3))).as("the late event runs").isNull();
        f.watermark("acc-1", 3);
        assertThat(sequences.check(claimedEvent("acc-1", 6)).kind()).isEqualTo(Step.Kind.SET_ASIDE);
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).as("watermark 3, dead letters up to 5").isEqualTo(2);

        // The replayed dead letters run in order: 4 runs, then 5, the highest dead-lettered, unblocks it.
        Work replayedFour = claimedEvent("acc-1", 4);
        assertThat(sequences.check(replayedFour)).isNull();
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(2);
        f.watermark("acc-1", 4);
        assertThat(sequences.check(claimedEvent("acc-1", 5))).isNull();
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(1);

        // A watermark read past the blocked number unblocks too (another process ran the events).
        f.watermark("acc-2", 9);
        assertThat(sequences.check(claimedEvent("acc-2", 7))).as("stale").isEqualTo(Step.NEXT);
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isZero();

        // Blocked again later: logged again.
        f.watermark("acc-1", 5);
        deadLetterAsGap(claimedEvent("acc-1", 8));
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(1);
        assertThat(warnings()).hasSize(3);
    }

    @Test
    void inTransactionalModeACommittedOrStaleEventAtOrPastTheBlockedNumberUnblocksItsAggregate() {
        sequences("");
        f.watermark("acc-1", 2);
        f.watermark("acc-2", 2);
        for (String aggregate : List.of("acc-1", "acc-2")) {
            Work w = claimedEvent(aggregate, 5);
            assertThat(sequences.gap(w, -1).kind()).isEqualTo(Step.Kind.SET_ASIDE);
            assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isPositive();
            f.ticker.advance(Duration.ofSeconds(10));
            assertThat(sequences.gap(w, -1)).isEqualTo(Step.NEXT);
        }
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isZero();
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(2);
        assertThat(warnings()).hasSize(2).allSatisfy(w -> assertThat(w).contains("while its watermark was 2"));

        sequences.ran(claimedEvent("acc-1", 4));
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).as("4 is below the dead-lettered 5").isEqualTo(2);
        sequences.ran(claimedEvent("acc-1", 5));
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(1);
        sequences.ran(claimedEvent("acc-2", 6));
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isZero();
    }

    @Test
    void aSetAsideEventThatComesBackAndCommitsInItsTransactionWaitsNoMore() {
        sequences("");
        f.watermark("acc-1", 2);
        Work w = claimedEvent("acc-1", 4);
        assertThat(sequences.gap(w, -1).kind()).isEqualTo(Step.Kind.SET_ASIDE);
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isEqualTo(1);

        sequences.ran(w);

        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING)).isZero();
        assertThat(gauge(PipelineMetrics.SEQUENCE_WAITING_AGGREGATES)).isZero();
    }

    @Test
    void theBlockedSetIsCappedAndWhatOverflowsIsCounted() {
        sequences("", 2);
        for (String aggregate : List.of("acc-1", "acc-2", "acc-3", "acc-4")) {
            deadLetterAsGap(claimedEvent(aggregate, 3));
        }
        deadLetterAsGap(claimedEvent("acc-1", 4));

        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(2);
        assertThat(blockedOverflow()).isEqualTo(2);
        assertThat(sequences.blocked()).isEqualTo(2);
        List<String> full = logged.list.stream().filter(e -> e.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("more than 2 aggregates")).toList();
        assertThat(full).as("logged once").hasSize(1);
        assertThat(full.get(0)).contains("counted in idem.sequence.blocked.overflow",
                "idem dlq replay --pipeline orders --cause sequence-gap");
        assertThat(warnings()).as("the tracked ones").hasSize(2);

        // Room again once one is healed.
        f.watermark("acc-1", 4);
        assertThat(sequences.check(claimedEvent("acc-1", 5))).isNull();
        deadLetterAsGap(claimedEvent("acc-5", 3));
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isEqualTo(2);
        assertThat(blockedOverflow()).isEqualTo(2);
    }

    @Test
    void aGapEventHandedBackRatherThanDeadLetteredBlocksNothing() {
        sequences("");
        f.watermark("acc-1", 1);
        Work w = claimedEvent("acc-1", 3);
        sequences.check(w);
        f.ticker.advance(Duration.ofSeconds(10));
        f.store.fail("release", 1, false);

        assertThat(sequences.check(w)).isEqualTo(Step.NEXT);

        assertThat(delivery(w).settlements).as("handed back: its key could not be released")
                .containsExactly("retryLater(" + StoreCalls.BACKOFF_MAX + ")");
        assertThat(gauge(PipelineMetrics.SEQUENCE_BLOCKED)).isZero();
        assertThat(warnings()).isEmpty();
    }

    @Test
    void anAggregateIdThatIsNoPlainShellWordIsQuotedInTheCommand() {
        assertThat(Sequences.shellWord("acc-1")).isEqualTo("acc-1");
        assertThat(Sequences.shellWord("tenant:42/acc_1")).isEqualTo("tenant:42/acc_1");
        assertThat(Sequences.shellWord("acc 1")).isEqualTo("'acc 1'");
        assertThat(Sequences.shellWord("o'brien;rm -rf")).isEqualTo("'o'\\''brien;rm -rf'");
        assertThat(Sequences.shellWord("$(id)")).isEqualTo("'$(id)'");
        assertThat(Sequences.shellWord("")).isEqualTo("''");
    }
}
