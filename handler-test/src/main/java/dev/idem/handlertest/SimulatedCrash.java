package dev.idem.handlertest;

/**
 * Thrown where a crash test killed a run: the handler's thread stops there, as a {@code kill -9} of its process would
 * stop it. The test's runtime is dead by then, so whatever the runtime does with the exception reaches neither the
 * store nor the broker.
 */
final class SimulatedCrash extends RuntimeException {

    private static final long serialVersionUID = 1L;

    SimulatedCrash(String where) {
        super("killed by the crash test " + where + " (as kill -9 would)", null, false, false);
    }
}
