package dev.idem.runtime.internal.pipeline;

/**
 * What one run of a work asks of the {@link KeyScheduler} once it returns: go on with the key's next
 * message, park the key on a timer with this work still at its head, hold the key until the work's
 * completion is written, run it again alone (a suspect), hand the key's queued messages back to the
 * broker behind this one, or set the work aside while the key's later messages run.
 */
record Step(Kind kind, long parkNanos) {

    enum Kind {
        /** The work is settled (or its outcome belongs to another work): the key's next message may run. */
        NEXT,
        /** The work stays at the key's head; the key runs again after {@link #parkNanos}. */
        PARK,
        /**
         * The handler ran and the work's completion is being written in a batch: the key holds, with the
         * work at its head, until the work's {@link KeyScheduler.Slot#resume} says what the write decided.
         */
        AWAIT,
        /** The work is a suspect: run it again, alone. */
        ISOLATE,
        /** The work went back to the broker unfinished: the key's later messages go back with it. */
        HANDED_BACK,
        /**
         * The work cannot run before later messages of its key (a sequence gap): it leaves the head and waits
         * beside the key's queue, while the key's next messages run. It comes back to the head after the next of
         * them settles, or after {@link #parkNanos} at the latest.
         */
        SET_ASIDE
    }

    static final Step NEXT = new Step(Kind.NEXT, 0);
    static final Step AWAIT = new Step(Kind.AWAIT, 0);
    static final Step ISOLATE = new Step(Kind.ISOLATE, 0);
    static final Step HANDED_BACK = new Step(Kind.HANDED_BACK, 0);

    static Step setAside(long nanos) {
        return new Step(Kind.SET_ASIDE, Math.max(0, nanos));
    }

    static Step park(long nanos) {
        return new Step(Kind.PARK, Math.max(0, nanos));
    }
}
