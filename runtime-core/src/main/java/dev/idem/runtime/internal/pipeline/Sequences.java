package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.SequencePolicy;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.StoreKey;
import java.util.Comparator;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sequence guard ({@code pipelines.<name>.sequence}): finds each event's aggregate and number at intake,
 * and before an event runs compares its number with the aggregate's watermark: at or below it the event is
 * stale (acked, not run), the next number runs (its completion raises the watermark, see
 * {@link PipelineState#advanceOf}), a later one waits set aside until the numbers before it ran or the gap
 * timeout passed, or runs at once under {@code gaps: accept}. The aggregate is the event's ordering key, so
 * the events of one aggregate never run at once in this pipeline. Thread-safe.
 */
final class Sequences {

    private static final Logger log = LoggerFactory.getLogger(Sequences.class);

    static final String INVALID = "invalid-sequence";
    static final String GAP = "sequence-gap";

    /** The order in which events set aside come back to their aggregate's queue: lowest number first. */
    static final Comparator<Work> ORDER = Comparator.comparingLong(w -> w.sequenceNumber);

    private final PipelineState s;
    private final StoreCalls store;
    private final Outcomes outcomes;
    private final Settlement settle;
    private final SequencePolicy policy;
    private final IdExtractor[] aggregates;
    private final IdExtractor[] numbers;

    Sequences(PipelineState state, StoreCalls store, Outcomes outcomes, Settlement settle,
            List<IdExtractor> aggregates, List<IdExtractor> numbers) {
        this.s = state;
        this.store = store;
        this.outcomes = outcomes;
        this.settle = settle;
        this.policy = state.config.sequence();
        this.aggregates = aggregates.toArray(new IdExtractor[0]);
        this.numbers = numbers.toArray(new IdExtractor[0]);
    }

    /**
     * Sets the work's aggregate and number, or its reject cause ({@value #INVALID}) when either is missing
     * or malformed. Called at intake, for works with an idempotency key.
     */
    void resolve(Work w) {
        String aggregate;
        String number;
        try {
            aggregate = first(aggregates, w);
            number = first(numbers, w);
        } catch (RuntimeException e) {
            reject(w, "the sequence could not be read: " + e.getMessage());
            return;
        }
        if (aggregate == null) {
            reject(w, "no aggregate ID found by the pipeline's sequence.aggregate extractors");
            return;
        }
        String problem = KeyResolver.invalidity(aggregate);
        if (problem != null) {
            reject(w, problem.replace("idempotency key", "aggregate ID"));
            return;
        }
        if (number == null) {
            reject(w, "no sequence number found by the pipeline's sequence.number extractors");
            return;
        }
        long n = parse(number);
        if (n < 1) {
            reject(w, "the sequence number '" + LogSafe.text(abbreviate(number)) + "' is not a decimal number from 1"
                    + " to " + Long.MAX_VALUE);
            return;
        }
        w.aggregate = new StoreKey(s.namespace, aggregate);
        w.sequenceNumber = n;
    }

    private static String first(IdExtractor[] chain, Work w) {
        for (IdExtractor extractor : chain) {
            String value = extractor.extract(w.message);
            if (value != null && !value.isEmpty()) {
                return value;
            }
        }
        return null;
    }

    /** The number, or -1 unless it is plain decimal digits from 1 to {@link Long#MAX_VALUE}. */
    static long parse(String text) {
        String t = text.strip();
        if (t.isEmpty() || t.length() > 19) {
            return -1;
        }
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
        }
        try {
            return Long.parseLong(t);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static String abbreviate(String text) {
        return text.length() <= 40 ? text : text.substring(0, 40) + "...";
    }

    private static void reject(Work w, String detail) {
        w.rejectCause = INVALID;
        w.rejectDetail = detail;
    }

    /**
     * Plain mode, before a claimed event runs: reads the watermark and settles a stale event, sets a gapped one
     * aside or dead-letters it once its wait is over. {@code null} when the event is to run.
     */
    Step check(Work w) {
        Long read = store.watermark(w, w.aggregate);
        if (read == null) {
            settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
            return Step.HANDED_BACK;
        }
        long watermark = read;
        if (w.sequenceNumber <= watermark) {
            stale(w, watermark);
            if (w.claim.held() && !settle.release(w)) {
                log.debug("Pipeline '{}': the claim of stale {} runs out on its own", s.name, w.describe());
            }
            settle.ack(w, outcomes.stale);
            return Step.NEXT;
        }
        if (w.sequenceNumber == watermark + 1 || policy.gaps() == SequencePolicy.Gaps.ACCEPT) {
            return null;
        }
        return gap(w, watermark);
    }

    /** Logs a stale event; the caller settles it as {@code stale}. */
    void stale(Work w, long watermark) {
        log.debug("Pipeline '{}': {} is stale: sequence number {} of aggregate '{}', whose watermark is {}", s.name,
                w.describe(), w.sequenceNumber, LogSafe.text(w.aggregate.id()), watermark);
    }

    /**
     * An event numbered past the next one, under {@code gaps: wait}: set aside until the gap timeout, then
     * dead-lettered. {@code watermark} is -1 when the store did not say (transactional mode: the run's transaction
     * saw the gap); then it is read here before dead-lettering, so that the dead letter names the missing numbers.
     */
    Step gap(Work w, long watermark) {
        long now = s.now();
        if (w.gapDeadline == 0) {
            w.gapDeadline = now + policy.gapTimeout().toNanos();
            outcomes.gapWaited.count(w);
        }
        long left = w.gapDeadline - now;
        if (left > 0) {
            return Step.setAside(left);
        }
        if (watermark < 0) {
            Long read = store.watermark(w, w.aggregate);
            if (read == null) {
                settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
                return Step.HANDED_BACK;
            }
            if (read >= w.sequenceNumber - 1) {
                // The gap closed since the transaction saw it: run again, the transaction runs it or finds it stale.
                return Step.park(0);
            }
            watermark = read;
        }
        String missing = watermark + 1 == w.sequenceNumber - 1 ? "number " + (watermark + 1)
                : "numbers " + (watermark + 1) + " to " + (w.sequenceNumber - 1);
        String detail = "event " + w.sequenceNumber + " of aggregate '" + LogSafe.text(w.aggregate.id())
                + "' waited " + ConfigKey.formatDuration(policy.gapTimeout()) + " (sequence.gap-timeout) for " + missing
                + ", which did not come";
        log.warn("Pipeline '{}': dead-lettering {}: {}", s.name, w.describe(), detail);
        settle.deadLetter(w, GAP, detail, 0);
        return Step.NEXT;
    }

    boolean waitsForGaps() {
        return policy.gaps() == SequencePolicy.Gaps.WAIT;
    }
}
