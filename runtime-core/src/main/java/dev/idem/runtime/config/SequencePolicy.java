package dev.idem.runtime.config;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The sequence guard of one pipeline ({@code pipelines.<name>.sequence}): events of one aggregate run in
 * the order of their numbers, once each; see {@code docs/design.md}, "The sequence guard".
 *
 * @param aggregate the extractor chain of the aggregate's ID (the ordering key of the pipeline)
 * @param number the extractor chain of the event's sequence number, an unsigned decimal long
 * @param gaps what an event numbered past the next one does
 * @param gapTimeout how long an event waits for the numbers before it, under {@link Gaps#WAIT}
 * @param retention how long an aggregate's watermark is remembered after its last event
 */
public record SequencePolicy(List<PluginSection> aggregate, List<PluginSection> number, Gaps gaps,
        Duration gapTimeout, Duration retention) {

    public SequencePolicy {
        aggregate = List.copyOf(aggregate);
        number = List.copyOf(number);
        Objects.requireNonNull(gaps, "gaps");
        Objects.requireNonNull(gapTimeout, "gapTimeout");
        Objects.requireNonNull(retention, "retention");
    }

    /** What an event numbered past the watermark's next number does. */
    public enum Gaps {
        /** Waits, without holding up other aggregates, for the missing numbers; dead-lettered after the timeout. */
        WAIT,
        /** Runs at once; the watermark jumps to its number, and the missing ones arriving later are stale. */
        ACCEPT
    }
}
