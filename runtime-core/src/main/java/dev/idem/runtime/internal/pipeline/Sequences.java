package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.SequencePolicy;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.StoreKey;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sequence guard ({@code pipelines.<name>.sequence}): finds each event's aggregate and number at intake,
 * and before an event runs compares its number with the aggregate's watermark: at or below it the event is
 * stale (acked, not run), the next number runs (its completion raises the watermark, see
 * {@link PipelineState#advanceOf}), a later one waits set aside until the numbers before it ran or the gap
 * timeout passed, or runs at once under {@code gaps: accept}. The aggregate is the event's ordering key, so
 * the events of one aggregate never run at once in this pipeline.
 *
 * <p>It is also the one owner of what the guard's gauges show ({@link PipelineMetrics#watchSequences}): the events
 * set aside for a gap now ({@link #waiting}, {@link #waitingAggregates}) and the aggregates <em>blocked</em>
 * ({@link #blocked}): an event of theirs was dead-lettered as {@value #GAP} and their watermark has not reached
 * its number since, so each later event of theirs waits {@code gap-timeout} and follows it into the dead-letter
 * destination, until its dead letters are replayed in order ({@code idem dlq replay --aggregate}). The blocked set
 * holds at most {@value #MAX_BLOCKED} aggregates; past that, dead letters are counted in {@link #blockedOverflow}.
 * All of it is this process's view, forgotten on restart. Thread-safe.
 */
final class Sequences {

    private static final Logger log = LoggerFactory.getLogger(Sequences.class);

    static final String INVALID = "invalid-sequence";
    static final String GAP = "sequence-gap";
    /** The outcome a work has once {@link Settlement#deadLetter} dead-lettered it. */
    private static final String DEAD_LETTERED = "dead-lettered";

    /** The order in which events set aside come back to their aggregate's queue: lowest number first. */
    static final Comparator<Work> ORDER = Comparator.comparingLong(w -> w.sequenceNumber);

    /** The most aggregates {@link #blocked} tracks at once. */
    static final int MAX_BLOCKED = 10_000;

    /** Below this many entries, {@link #aside} is not swept of works settled while set aside. */
    private static final int SWEEP_FLOOR = 64;

    private final PipelineState s;
    private final StoreCalls store;
    private final Outcomes outcomes;
    private final Settlement settle;
    private final SequencePolicy policy;
    private final IdExtractor[] aggregates;
    private final IdExtractor[] numbers;

    /**
     * The events set aside for a gap, with their aggregate: added when {@link #gap} sets one aside, removed when it
     * comes back to the guard ({@link #check}, {@link #gap}, {@link #ran}). One settled while set aside (handed
     * back behind an earlier event, or when stopping) is not counted, and is swept out once the map doubled since
     * the last sweep, so it holds at most about twice the events in flight.
     */
    private final Map<Work, StoreKey> aside = new ConcurrentHashMap<>();
    private volatile int sweepAbove = SWEEP_FLOOR;
    /** Blocked aggregates and the highest number of theirs dead-lettered as {@value #GAP}. */
    private final Map<StoreKey, Long> blocked = new ConcurrentHashMap<>();
    /** {@value #GAP} dead letters whose aggregate was not tracked, {@link #blocked} being full. */
    private final AtomicLong blockedOverflow = new AtomicLong();
    private final int maxBlocked;

    Sequences(PipelineState state, StoreCalls store, Outcomes outcomes, Settlement settle,
            List<IdExtractor> aggregates, List<IdExtractor> numbers) {
        this(state, store, outcomes, settle, aggregates, numbers, MAX_BLOCKED);
    }

    /** @param maxBlocked the most aggregates {@link #blocked} tracks ({@value #MAX_BLOCKED} but in tests) */
    Sequences(PipelineState state, StoreCalls store, Outcomes outcomes, Settlement settle,
            List<IdExtractor> aggregates, List<IdExtractor> numbers, int maxBlocked) {
        this.maxBlocked = maxBlocked;
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
        w.aggregateId = aggregate;
        w.aggregate = s.storeKey(aggregate);
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
        if (w.gapDeadline != 0) {
            aside.remove(w);
        }
        Long read = store.watermark(w, w.aggregate);
        if (read == null) {
            settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
            return Step.HANDED_BACK;
        }
        long watermark = read;
        passed(w, watermark);
        if (w.sequenceNumber <= watermark) {
            stale(w, watermark);
            if (w.claim.held() && !settle.release(w)) {
                log.debug("Pipeline '{}': the claim of stale {} runs out on its own", s.name, w.describe());
            }
            settle.ack(w, outcomes.stale);
            return Step.NEXT;
        }
        if (w.sequenceNumber == watermark + 1 || policy.gaps() == SequencePolicy.Gaps.ACCEPT) {
            // It runs: its completion raises the watermark to its number.
            passed(w, w.sequenceNumber);
            return null;
        }
        return gap(w, watermark);
    }

    /** Logs a stale event; the caller settles it as {@code stale}. */
    void stale(Work w, long watermark) {
        log.debug("Pipeline '{}': {} is stale: sequence number {} of aggregate '{}', whose watermark is {}", s.name,
                w.describe(), w.sequenceNumber, LogSafe.text(w.aggregateId), watermark);
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
            setAside(w);
            return Step.setAside(left);
        }
        aside.remove(w);
        if (watermark < 0) {
            Long read = store.watermark(w, w.aggregate);
            if (read == null) {
                settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
                return Step.HANDED_BACK;
            }
            passed(w, read);
            if (read >= w.sequenceNumber - 1) {
                // The gap closed since the transaction saw it: run again, the transaction runs it or finds it stale.
                return Step.park(0);
            }
            watermark = read;
        }
        String missing = watermark + 1 == w.sequenceNumber - 1 ? "number " + (watermark + 1)
                : "numbers " + (watermark + 1) + " to " + (w.sequenceNumber - 1);
        String detail = "event " + w.sequenceNumber + " of aggregate '" + LogSafe.text(w.aggregateId)
                + "' waited " + ConfigKey.formatDuration(policy.gapTimeout()) + " (sequence.gap-timeout) for " + missing
                + ", which did not come";
        log.warn("Pipeline '{}': dead-lettering {}: {}", s.name, w.describe(), detail);
        settle.deadLetter(w, GAP, detail, 0);
        if (DEAD_LETTERED.equals(w.outcome)) {
            block(w, watermark);
        }
        return Step.NEXT;
    }

    /**
     * Transactional mode: {@code w}'s transaction committed it, or found it stale. Either way its aggregate's
     * watermark is at or past its number, and it waits no more.
     */
    void ran(Work w) {
        if (w.gapDeadline != 0) {
            aside.remove(w);
        }
        passed(w, w.sequenceNumber);
    }

    private void setAside(Work w) {
        if (aside.put(w, w.aggregate) == null && aside.size() > sweepAbove) {
            sweep();
        }
    }

    /** Drops the works settled while set aside; the next sweep comes once the map doubled. */
    private void sweep() {
        aside.keySet().removeIf(Work::isSettled);
        sweepAbove = Math.max(SWEEP_FLOOR, 2 * aside.size());
    }

    /** The aggregate's watermark is at least {@code number}: it is no longer blocked by a dead letter up to it. */
    private void passed(Work w, long number) {
        if (blocked.isEmpty()) {
            return;
        }
        Long at = blocked.get(w.aggregate);
        if (at != null && number >= at && blocked.remove(w.aggregate, at)) {
            log.info("Pipeline '{}': aggregate '{}' is no longer blocked: its events reached number {}, at or past {},"
                    + " the highest of its numbers dead-lettered as {}", s.name, LogSafe.text(w.aggregateId), number,
                    at, GAP);
        }
    }

    /** {@code w}, which waited for the numbers after {@code watermark}, was dead-lettered as {@value #GAP}. */
    private void block(Work w, long watermark) {
        StoreKey aggregate = w.aggregate;
        long number = w.sequenceNumber;
        Long at = blocked.get(aggregate);
        if (at == null && blocked.size() >= maxBlocked) {
            if (blockedOverflow.getAndIncrement() == 0) {
                log.warn("Pipeline '{}': more than {} aggregates are blocked by events dead-lettered as {}; the others"
                        + " are counted in {} but not tracked. Heal them all by replaying those dead letters (the"
                        + " guard sets aside each aggregate's until the numbers before them ran): {}", s.name,
                        maxBlocked, GAP, PipelineMetrics.SEQUENCE_BLOCKED_OVERFLOW,
                        "idem dlq replay --pipeline " + shellWord(s.name) + " --cause " + GAP);
            }
            return;
        }
        if (at == null && blocked.putIfAbsent(aggregate, number) == null) {
            String id = LogSafe.text(w.aggregateId);
            log.warn("Pipeline '{}': aggregate '{}' is blocked: its event {} was dead-lettered as {} while its"
                    + " watermark was {}, so each later event of it will wait sequence.gap-timeout ({}) and be"
                    + " dead-lettered too. Once {} came (a late event runs when it comes) or if it is among the"
                    + " dead letters, heal it by replaying its dead letters in sequence order: {}", s.name, id, number,
                    GAP, watermark,
                    ConfigKey.formatDuration(policy.gapTimeout()),
                    watermark + 1 == number - 1 ? "number " + (watermark + 1)
                            : "numbers " + (watermark + 1) + " to " + (number - 1),
                    "idem dlq replay --pipeline " + shellWord(s.name) + " --aggregate " + shellWord(id));
            return;
        }
        blocked.merge(aggregate, number, Math::max);
    }

    /** {@code text} as one shell word: as it is when it is plainly safe, else in single quotes. */
    static String shellWord(String text) {
        if (!text.isEmpty() && text.chars().allMatch(c -> c < 0x80 && (Character.isLetterOrDigit(c)
                || "-_.,:/@%+=".indexOf(c) >= 0))) {
            return text;
        }
        return "'" + text.replace("'", "'\\''") + "'";
    }

    /** Events set aside for a gap now. */
    int waiting() {
        int n = 0;
        for (Work w : aside.keySet()) {
            if (!w.isSettled()) {
                n++;
            }
        }
        return n;
    }

    /** The entries {@link #aside} holds, settled or not (for tests of its bound). */
    int setAsideHeld() {
        return aside.size();
    }

    /** Aggregates with an event set aside for a gap now. */
    int waitingAggregates() {
        Set<StoreKey> aggregates = new HashSet<>();
        for (Map.Entry<Work, StoreKey> e : aside.entrySet()) {
            if (!e.getKey().isSettled()) {
                aggregates.add(e.getValue());
            }
        }
        return aggregates.size();
    }

    /** Aggregates blocked by an event dead-lettered as {@value #GAP} (at most {@value #MAX_BLOCKED}, by default). */
    int blocked() {
        return blocked.size();
    }

    /** {@value #GAP} dead letters whose aggregate could not be tracked as blocked: the set was full. */
    long blockedOverflow() {
        return blockedOverflow.get();
    }

    boolean waitsForGaps() {
        return policy.gaps() == SequencePolicy.Gaps.WAIT;
    }
}
