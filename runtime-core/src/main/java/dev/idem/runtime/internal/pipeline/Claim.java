package dev.idem.runtime.internal.pipeline;

/**
 * The claim phase of a {@link Work}: whether this pipeline holds the key's claim in the store, under which
 * fencing token and attempt, and, while another owner holds the key, when to ask again. Every change is one of
 * the transitions below, named after what the store answered; nothing else writes these fields.
 *
 * <p>Threads: the intake thread writes it at the batch's claim, then the worker running the work; the committer
 * ends it when a batched completion is stored, the lease keeper marks it lost. {@link #held} and the lease fields
 * are volatile, since the lease keeper reads them from its own thread.
 */
final class Claim {

    /** Whether this pipeline holds the key's claim: true from {@link #acquired} until {@link #ended} or {@link #lost}. */
    private volatile boolean held;
    private long token;
    /** The store's attempt number of the claim: 1 for a fresh key, more after takeovers. */
    private int storeAttempt = 1;
    /**
     * Taken over after a lease ran out, or ran out of memory beside other runs ({@link #isolate}): its start is
     * recorded and it runs alone.
     */
    private boolean suspect;
    /** The store's count of recorded starts, for a suspect; 0 otherwise. */
    private int startsRecorded;
    private volatile long leaseRenewedAtNanos;
    /** Another owner took the key over while this pipeline still held it. */
    private volatile boolean leaseLost;
    /** Deferred because another owner held the key: claim again once the ticker passes {@link #deferredUntil}. */
    private boolean pending;
    private long deferredUntil;
    /** How often the key was found held by another owner: the re-check back-off grows with it. */
    private int deferrals;

    /** The store answered {@code ACQUIRED}. */
    void acquired(long token, int attempt, long nowNanos) {
        this.token = token;
        this.storeAttempt = attempt;
        this.suspect = attempt > 1;
        this.pending = false;
        this.leaseRenewedAtNanos = nowNanos;
        this.held = true;
    }

    /** The claim is over: the key was completed (also inside a committed transaction) or released. */
    void ended() {
        held = false;
    }

    /** The store said another owner has the key now. */
    void lost() {
        held = false;
        leaseLost = true;
    }

    /**
     * A run failed in a way that may have been another run's doing (out of memory while other handlers ran): from
     * now on, as a suspect, it runs alone and its starts are recorded, so its failures are its own, and a run that
     * takes the process down is counted against {@code max-deliveries}.
     */
    void isolate() {
        suspect = true;
    }

    /** The lease keeper could not keep the lease: another consumer took it over while this one still ran. */
    void leaseTakenOver() {
        leaseLost = true;
    }

    void renewed(long nowNanos) {
        leaseRenewedAtNanos = nowNanos;
    }

    /** The store answered {@code DUPLICATE}: nothing more to claim. */
    void settledByStore() {
        pending = false;
    }

    /** Another owner holds the key: ask again at {@code untilNanos} (ticker time). */
    void deferUntil(long untilNanos) {
        deferrals++;
        pending = true;
        deferredUntil = untilNanos;
    }

    void startsRecorded(int starts) {
        startsRecorded = starts;
    }

    boolean held() {
        return held;
    }

    long token() {
        return token;
    }

    int storeAttempt() {
        return storeAttempt;
    }

    boolean suspect() {
        return suspect;
    }

    int startsRecorded() {
        return startsRecorded;
    }

    long leaseRenewedAtNanos() {
        return leaseRenewedAtNanos;
    }

    boolean leaseLost() {
        return leaseLost;
    }

    boolean pending() {
        return pending;
    }

    long deferredUntil() {
        return deferredUntil;
    }

    int deferrals() {
        return deferrals;
    }
}
