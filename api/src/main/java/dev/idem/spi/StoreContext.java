package dev.idem.spi;

import java.util.function.LongSupplier;

/**
 * What the runtime provides to every {@link DedupStore} it creates.
 *
 * @param nanoTicker the time source, in nanoseconds like {@link System#nanoTime()}, for stores that
 *        keep time in-process; tests inject a manual one. Stores with a server clock ignore it.
 */
public record StoreContext(LongSupplier nanoTicker) {

    /** The context of a production runtime: the system ticker. */
    public static StoreContext system() {
        return new StoreContext(System::nanoTime);
    }
}
