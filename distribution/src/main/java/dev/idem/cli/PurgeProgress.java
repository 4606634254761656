package dev.idem.cli;

import java.io.PrintWriter;
import java.util.function.LongSupplier;

/**
 * The progress of {@code idem store purge} on stderr. A store cannot say beforehand how many keys qualify (that
 * would cost a scan of its own), so there is no total to fill a bar towards: on a terminal it is one line
 * redrawn in place (at most every {@value #TERMINAL_EVERY_MS} ms) with the keys deleted so far, the batches and the
 * rate, erased when the purge ends so that the final count stands alone; elsewhere (a log, a pipe) a plain line
 * every {@value #PLAIN_EVERY_S} s, and none for a purge that ends sooner.
 *
 * <p>Not thread-safe: the command's thread alone calls it.
 */
final class PurgeProgress {

    static final long TERMINAL_EVERY_MS = 100;
    static final long PLAIN_EVERY_S = 10;

    private static final String SPINNER = "|/-\\";

    private final PrintWriter err;
    private final boolean terminal;
    private final LongSupplier nanoTime;
    private final String what;
    private final long started;
    private long lastShown;
    private int width;
    private int frame;

    /**
     * @param terminal whether {@code err} is a terminal, where a line can be redrawn in place
     * @param nanoTime the clock, {@link System#nanoTime()} but in tests
     * @param what what is in progress, such as {@code Purging pipeline 'orders'}
     */
    PurgeProgress(PrintWriter err, boolean terminal, LongSupplier nanoTime, String what) {
        this.err = err;
        this.terminal = terminal;
        this.nanoTime = nanoTime;
        this.what = what;
        this.started = nanoTime.getAsLong();
        this.lastShown = started;
    }

    /** Reports the totals after a batch; shows them if it is time to. */
    void update(long deleted, long batches) {
        long now = nanoTime.getAsLong();
        long every = terminal ? TERMINAL_EVERY_MS * 1_000_000 : PLAIN_EVERY_S * 1_000_000_000;
        if (now - lastShown < every) {
            return;
        }
        lastShown = now;
        double seconds = Math.max(1e-9, (now - started) / 1e9);
        String line = String.format("%s: %,d keys deleted in %,d batch%s (%,.0f/s)", what, deleted, batches,
                batches == 1 ? "" : "es", deleted / seconds);
        if (terminal) {
            line = SPINNER.charAt(frame++ % SPINNER.length()) + " " + line;
            err.print("\r" + line + " ".repeat(Math.max(0, width - line.length())));
            width = line.length();
        } else {
            err.println(line);
        }
        err.flush();
    }

    /** Ends the progress: on a terminal, erases the line. */
    void done() {
        if (terminal && width > 0) {
            err.print("\r" + " ".repeat(width) + "\r");
            err.flush();
            width = 0;
        }
    }
}
