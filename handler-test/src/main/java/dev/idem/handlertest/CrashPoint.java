package dev.idem.handlertest;

import java.util.Objects;

/**
 * Where a crash test kills a handler's run, as a {@code kill -9} of its process would: the run is abandoned there,
 * the store keeps what it had (the claim, the steps recorded), nothing more is written or acknowledged, and the message
 * comes again once the claim's lease ran out.
 *
 * @param kind which point
 * @param ordinal for {@link Kind#AFTER_EFFECT} and {@link Kind#AFTER_STEP}, which effect or step of the run (from 1);
 *        0 otherwise
 * @param name the effect's or step's name where the run without crashes gave each message the same one; else
 *        {@code null}
 */
public record CrashPoint(Kind kind, int ordinal, String name) {

    /** The points, in the order a run passes them. */
    public enum Kind {
        /** No crash: the pass that every other is compared with, or the stream's pass. */
        NONE,
        /** The key is claimed, the handler has not started. */
        BEFORE_HANDLER,
        /** Right after the handler's n-th effect ({@link EffectRecorder#record}): done outside, nothing recorded. */
        AFTER_EFFECT,
        /** Right after the handler's n-th durable step returned: its result is recorded. */
        AFTER_STEP,
        /** Plain mode: the handler returned (and what it emitted was published), the key is not completed yet. */
        BEFORE_COMPLETION,
        /** Transactional mode: the handler returned inside the transaction, which has not committed. */
        BEFORE_COMMIT
    }

    public CrashPoint {
        Objects.requireNonNull(kind, "kind");
    }

    /** The point as the report names it: {@code after effect 1 ('charge')}. */
    public String label() {
        return switch (kind) {
            case NONE -> "no crash";
            case BEFORE_HANDLER -> "before the handler";
            case AFTER_EFFECT -> "after effect " + ordinal + (name == null ? "" : " ('" + name + "')");
            case AFTER_STEP -> "after step " + ordinal + (name == null ? "" : " ('" + name + "')");
            case BEFORE_COMPLETION -> "after the handler, before the key completed";
            case BEFORE_COMMIT -> "inside the transaction, before it committed";
        };
    }

    @Override
    public String toString() {
        return label();
    }
}
