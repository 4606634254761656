package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.StageFixture.delivery;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Sequences} on its own: finding each event's aggregate and number (or rejecting it as
 * {@code invalid-sequence}), and, before it runs, comparing its number with the aggregate's watermark in the
 * Caffeine store: stale, next, or set aside until {@code sequence.gap-timeout} and then dead-lettered as
 * {@code sequence-gap}.
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

    @AfterEach
    void close() {
        f.close();
    }

    private Sequences sequences(String extra) {
        f = new StageFixture(SEQUENCE + extra);
        sequences = new Sequences(f.state, f.storeCalls, f.outcomes, f.settlement, List.of(AGGREGATE),
                List.of(NUMBER));
        return sequences;
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
}
