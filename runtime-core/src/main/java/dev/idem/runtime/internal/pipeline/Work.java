package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.StoreKey;
import io.opentelemetry.api.trace.Span;
import java.util.ArrayList;
import java.util.List;

/**
 * One delivery's way through a pipeline, in three phases, each written by the stage that owns it: what was
 * received and resolved (the fields here, written by the {@link Intake} before the work is dispatched, then only
 * read), its {@link Claim} and its handler {@link Run}. Settling is {@link Settlement}'s: {@link #markSettled} and
 * the followers are guarded by this object's monitor. The {@link KeyScheduler.Slot} is the handle of its place in
 * the scheduler, through which a later stage reports back (a written completion, a hand-back).
 *
 * <p>One thread at a time works on a work: the adapter's, then a worker's (handed over through the scheduler's
 * lock), then a committer's for a batched completion.
 */
final class Work {

    final Delivery delivery;
    final InboundMessage message;
    final Claim claim = new Claim();
    final Run run = new Run();

    /** The idempotency key without namespace; {@code null} when unprotected. */
    String key;
    /** Why the message is dead-lettered without a claim ({@code missing-id}, {@code invalid-id}, ...), or null. */
    String rejectCause;
    String rejectDetail;
    /** The key in the store; {@code null} when the message runs without a claim. */
    StoreKey storeKey;
    String fingerprint;
    /** The key its messages run in order under, or {@code null} when it is ordered with nothing. */
    String orderKey;
    /** The sequence guard's aggregate, in the pipeline's namespace; {@code null} without the guard. */
    StoreKey aggregate;
    /** The aggregate's ID as the message gave it, for logs and dead letters; {@code aggregate} may hold a digest. */
    String aggregateId;
    /** The event's sequence number under the guard, at least 1. */
    long sequenceNumber;
    /** When a set-aside event stops waiting for the numbers before it (ticker time); 0 until it first waits. */
    long gapDeadline;
    /** Whether the intake hands it to the scheduler: claimed (or deferred, to claim again), or unprotected. */
    boolean dispatched;
    /** The dispatched batch this work belongs to, for the lease keeper and the in-flight gauges. */
    Batch batch;
    /** Whether it counts against the pipeline's in-flight limit until settled. */
    boolean counted;
    /** Its place in the scheduler; set when the scheduler takes it in, cleared when it leaves it revoked. */
    KeyScheduler.Slot slot;
    /**
     * The broker took its delivery away (a partition or queue revoked): the scheduler hands it back instead of
     * holding it ({@link KeyScheduler#revoke}). Written and read under the scheduler's lock.
     */
    boolean revoked;
    /** The delivery's span while tracing is on; ended when it is settled. */
    Span span;
    /** The last outcome counted for it (processed, duplicate, stale...): the span's outcome once acked. */
    String outcome;
    /** Its claim's durable steps as this process knows them; read at the claim's first step ({@link Steps}). */
    Steps.Recorded steps;

    /** Later copies of the same key (same batch, or arrived while this one held it); they share its outcome. */
    private List<Work> followers;
    private volatile boolean settled;

    Work(Delivery delivery) {
        this.delivery = delivery;
        this.message = delivery.message();
    }

    /**
     * Makes {@code follower} share this work's outcome, unless this work is already settled.
     * Synchronized with {@link #markSettled} so no follower attaches after the followers were settled.
     */
    synchronized boolean addFollower(Work follower) {
        if (settled) {
            return false;
        }
        if (followers == null) {
            followers = new ArrayList<>(2);
        }
        followers.add(follower);
        return true;
    }

    /** The followers, once settled (none attaches after that); empty when none. */
    synchronized List<Work> followers() {
        return followers == null ? List.of() : followers;
    }

    boolean isSettled() {
        return settled;
    }

    /** Marks the delivery settled; false if it already was, so no path settles twice. */
    synchronized boolean markSettled() {
        if (settled) {
            return false;
        }
        settled = true;
        return true;
    }

    /** The run number the handler sees: runs of earlier owners that never completed, plus this process's. */
    int attempt() {
        return claim.storeAttempt() - 1 + run.count;
    }

    /** For log lines: every message-derived value escaped, so none can forge a line. */
    String describe() {
        return "message " + (key != null ? "key '" + LogSafe.text(key) + "'" : "without key")
                + (message.brokerMessageId() != null ? " (broker id " + LogSafe.text(message.brokerMessageId()) + ")"
                        : "")
                + " from " + LogSafe.text(message.source());
    }
}
