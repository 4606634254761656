package dev.idem.api.guard;

import dev.idem.api.RejectedException;
import java.util.Objects;

/**
 * What {@link StateMachine#apply} (or {@link StateMachine#decide}) did with one event for one entity.
 * Immutable and thread-safe.
 *
 * @param outcome whether the transition was made, had been made already, or is not allowed
 * @param event   the event applied
 * @param state   the entity's state after the call: the event's target for {@link Outcome#APPLIED} and
 *                {@link Outcome#ALREADY}; for {@link Outcome#ILLEGAL} the state it is in, or {@code null} when
 *                the entity does not exist (or its state column is {@code NULL})
 * @param exists  whether the entity exists; {@code false} only for {@link Outcome#ILLEGAL}
 * @param reason  a sentence for logs and {@link RejectedException}, naming the table, the ID, the state, the
 *                event and the states it applies in
 */
public record Transition(Outcome outcome, String event, String state, boolean exists, String reason) {

    /** The three ways an event can meet an entity. */
    public enum Outcome {
        /** The entity was in one of the event's from-states and is now in its target state. */
        APPLIED,
        /** The entity was in the event's target state already: a repeat, nothing changed. */
        ALREADY,
        /** The entity is in a state the event does not apply in, or does not exist: nothing changed. */
        ILLEGAL
    }

    /**
     * @throws NullPointerException     if {@code outcome}, {@code event} or {@code reason} is null
     * @throws IllegalArgumentException if an applied or repeated transition names no state or no entity
     */
    public Transition {
        Objects.requireNonNull(outcome, "outcome");
        Objects.requireNonNull(event, "event");
        Objects.requireNonNull(reason, "reason");
        if (outcome != Outcome.ILLEGAL && (state == null || !exists)) {
            throw new IllegalArgumentException("An " + outcome + " transition has an existing entity and a state");
        }
    }

    /** Whether this call made the transition. */
    public boolean applied() {
        return outcome == Outcome.APPLIED;
    }

    /**
     * This transition, unless it is {@link Outcome#ILLEGAL}.
     *
     * @return this, when the outcome is {@link Outcome#APPLIED} or {@link Outcome#ALREADY}
     * @throws RejectedException with {@link #reason()} when the outcome is {@link Outcome#ILLEGAL}; thrown from a
     *                           handler, it ends the run as {@code rejected}
     */
    public Transition orReject() {
        if (outcome == Outcome.ILLEGAL) {
            throw new RejectedException(reason);
        }
        return this;
    }
}
