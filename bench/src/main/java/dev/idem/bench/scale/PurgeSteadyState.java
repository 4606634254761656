package dev.idem.bench.scale;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Whether the JDBC store's own purge keeps its table flat under a steady stream of fresh keys, and what the purge
 * costs the stream: issue 30's steady state at the store, without a broker (20,000 messages a second end to end is
 * more than this 2-core machine carries with a broker beside the store; the store's share is what purging touches).
 *
 * <p>The store is created through its provider on a place of the run's own ({@link JdbcScaleStore}), with
 * {@code purge.interval} and {@code purge.batch-size} as given (the store's defaults otherwise: 1 minute, 1,000). A
 * stream of fresh keys at a fixed rate ({@code rate} keys/s, open loop: each of 4 threads keeps its own schedule and
 * catches up when it falls behind) claims batches of 100 and completes each with one {@code completeAll}, as a
 * pipeline's group commit does, every key kept for {@code -Didem.bench.retention} (claim and completion). On
 * PostgreSQL a plain {@code VACUUM} of the table runs every {@code -Didem.bench.vacuum-every} (1 minute; 0 for
 * none), standing in for autovacuum, which this machine's server has turned off; without it no server reuses
 * the space of deleted rows.
 *
 * <p>Printed per window ({@code -Didem.bench.window}, 30 s): keys/s completed, claim and completion p99, how far
 * the stream is behind its schedule at the window's end (it keeps up while this stays near 0), the table's rows,
 * those expired and not yet purged, its size (PostgreSQL {@code pg_total_relation_size}, MariaDB
 * {@code data_length + index_length}) and the vacuums run. Then: the rate of the windows before the first key
 * expired against the windows once the purge runs (the dent), and the size and rows of the steady windows, the
 * first against the last.
 *
 * <p>Run: {@code java -cp bench/target/benchmarks.jar dev.idem.bench.scale.PurgeSteadyState postgresql 20000 6m}.
 * Arguments: the store ({@code postgresql} or {@code mariadb}), the rate in keys/s, the duration ({@code 6m},
 * {@code 90s}). Properties: {@code idem.bench.retention} (1m), {@code idem.bench.purge-interval} (the store's
 * default, 1m), {@code idem.bench.purge-batch} (1000), {@code idem.bench.vacuum-every} (1m), {@code
 * idem.bench.window} (30s), {@code idem.bench.threads} (4), {@code idem.bench.batch} (100).
 */
public final class PurgeSteadyState {

    private static final Duration RETENTION = duration(System.getProperty("idem.bench.retention", "1m"));
    private static final String PURGE_INTERVAL = System.getProperty("idem.bench.purge-interval", "1m");
    private static final String PURGE_BATCH = System.getProperty("idem.bench.purge-batch", "1000");
    private static final Duration VACUUM_EVERY = duration(System.getProperty("idem.bench.vacuum-every", "1m"));
    private static final Duration WINDOW = duration(System.getProperty("idem.bench.window", "30s"));
    private static final int THREADS = Integer.getInteger("idem.bench.threads", 4);
    private static final int BATCH = Integer.getInteger("idem.bench.batch", 100);

    /** One window's figures. */
    private record Window(double endSeconds, double keysPerSecond, double claimP99, double completionP99,
            double behindSeconds, long rows, long expired, long bytes, long vacuums) {
    }

    private PurgeSteadyState() {
    }

    public static void main(String[] args) throws Exception {
        String name = args.length > 0 ? args[0] : "postgresql";
        double rate = args.length > 1 ? Double.parseDouble(args[1]) : 20_000;
        Duration length = duration(args.length > 2 ? args[2] : "6m");
        JdbcScaleStore target = switch (name) {
            case "postgresql" -> JdbcScaleStore.postgresql();
            case "mariadb" -> JdbcScaleStore.mariadb();
            default -> throw new IllegalArgumentException("store must be postgresql or mariadb, not " + name);
        };
        boolean vacuums = name.equals("postgresql") && !VACUUM_EVERY.isZero();
        System.out.printf(Locale.ROOT, "Purge steady state: %s, %,.0f keys/s in batches of %d from %d threads for %s;"
                + " retention %s; purge every %s in batches of %s; %s%n", name, rate, BATCH, THREADS, length,
                RETENTION, PURGE_INTERVAL, PURGE_BATCH, vacuums ? "VACUUM every " + VACUUM_EVERY : "no VACUUM");
        Thread cleanUp = new Thread(() -> {
            try {
                target.drop();
            } catch (Exception e) {
                System.err.println("Could not drop the run's tables: " + e);
            }
        });
        Runtime.getRuntime().addShutdownHook(cleanUp);
        List<Window> windows;
        try (DedupStore store = target.open(Map.of("purge.interval", PURGE_INTERVAL, "purge.batch-size",
                PURGE_BATCH))) {
            windows = run(store, target, rate, length, vacuums);
        } finally {
            target.drop();
            Runtime.getRuntime().removeShutdownHook(cleanUp);
        }
        System.out.print(summary(windows, rate));
        System.out.printf("Reproduce: java -Didem.bench.retention=%s -Didem.bench.purge-interval=%s"
                + " -Didem.bench.purge-batch=%s -Didem.bench.vacuum-every=%s -cp bench/target/benchmarks.jar %s %s %.0f"
                + " %s%n", text(RETENTION), PURGE_INTERVAL, PURGE_BATCH, text(VACUUM_EVERY),
                PurgeSteadyState.class.getName(), name, rate, text(length));
    }

    private static List<Window> run(DedupStore store, JdbcScaleStore target, double rate, Duration length,
            boolean vacuums) throws Exception {
        AtomicLong keys = new AtomicLong();
        AtomicLong vacuumsRun = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Latencies[]> latencies = new ArrayList<>();
        AtomicLongArray behind = new AtomicLongArray(THREADS);
        long start = System.nanoTime();
        long end = start + length.toNanos();
        long interval = (long) (BATCH * THREADS / rate * 1e9);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            Latencies[] mine = {new Latencies(), new Latencies()};
            latencies.add(mine);
            int thread = i;
            threads.add(started("stream-" + i, failure, () -> {
                long next = start + interval * thread / THREADS;
                while (failure.get() == null && next < end) {
                    long wait = next - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    List<ClaimRequest> requests = Workload.requests(BATCH, RETENTION);
                    long t0 = System.nanoTime();
                    long[] tokens = Workload.tokens(store.claim(requests));
                    long t1 = System.nanoTime();
                    Workload.checkCompleted(store.completeAll(Workload.completions(requests, tokens, RETENTION)));
                    long t2 = System.nanoTime();
                    synchronized (mine) {
                        mine[0].add(t1 - t0);
                        mine[1].add(t2 - t1);
                    }
                    keys.addAndGet(BATCH);
                    next += interval;
                    behind.set(thread, Math.max(0, t2 - next));
                }
            }));
        }
        if (vacuums) {
            threads.add(started("vacuum", failure, () -> {
                while (failure.get() == null && sleepUntil(Math.min(end, System.nanoTime() + VACUUM_EVERY.toNanos()),
                        end)) {
                    target.vacuum();
                    vacuumsRun.incrementAndGet();
                }
            }));
        }
        List<Window> windows = new ArrayList<>();
        System.out.printf("%8s %10s %10s %10s %9s %11s %11s %10s %8s%n", "t s", "keys/s", "claim p99", "compl p99",
                "behind s", "rows", "expired", "size MB", "vacuums");
        long previousKeys = 0;
        long windowStart = start;
        while (failure.get() == null && windowStart < end) {
            long windowEnd = Math.min(end, windowStart + WINDOW.toNanos());
            sleepUntil(windowEnd, Long.MAX_VALUE);
            List<Latencies> claims = new ArrayList<>();
            List<Latencies> completions = new ArrayList<>();
            for (Latencies[] mine : latencies) {
                synchronized (mine) {
                    claims.add(mine[0]);
                    completions.add(mine[1]);
                    mine[0] = new Latencies();
                    mine[1] = new Latencies();
                }
            }
            long done = keys.get();
            long lag = 0;
            for (int i = 0; i < behind.length(); i++) {
                lag = Math.max(lag, behind.get(i));
            }
            long[] rows = target.rows();
            Window w = new Window((windowEnd - start) / 1e9, (done - previousKeys) / ((windowEnd - windowStart) / 1e9),
                    Latencies.merge(claims).millis(0.99), Latencies.merge(completions).millis(0.99), lag / 1e9,
                    rows[0], rows[1], target.size(), vacuumsRun.get());
            windows.add(w);
            System.out.printf(Locale.ROOT, "%8.0f %,10.0f %10.2f %10.2f %9.2f %,11d %,11d %10.1f %8d%n", w.endSeconds(),
                    w.keysPerSecond(), w.claimP99(), w.completionP99(), w.behindSeconds(), w.rows(), w.expired(),
                    w.bytes() / 1e6, w.vacuums());
            previousKeys = done;
            windowStart = windowEnd;
        }
        Workload.joinAll(threads, failure);
        return windows;
    }

    /**
     * The windows that end before the first key can expire (its retention after the stream started) against those
     * that start once the first purge after that has run, and the steady windows' size and rows, first and last.
     */
    static String summary(List<Window> windows, double rate) {
        double firstExpiry = RETENTION.toNanos() / 1e9;
        double purging = firstExpiry + duration(PURGE_INTERVAL).toNanos() / 1e9;
        double window = WINDOW.toNanos() / 1e9;
        List<Window> before = windows.stream().filter(w -> w.endSeconds() <= firstExpiry).toList();
        List<Window> steady = windows.stream().filter(w -> w.endSeconds() - window >= purging).toList();
        StringBuilder out = new StringBuilder("\n");
        if (before.isEmpty() || steady.size() < 2) {
            return out.append("Too short to compare: make the run longer than retention + purge interval + two windows")
                    .append('\n').toString();
        }
        double rateBefore = before.stream().mapToDouble(Window::keysPerSecond).average().orElseThrow();
        double rateSteady = steady.stream().mapToDouble(Window::keysPerSecond).average().orElseThrow();
        double worst = steady.stream().mapToDouble(Window::keysPerSecond).min().orElseThrow();
        double maxBehind = steady.stream().mapToDouble(Window::behindSeconds).max().orElseThrow();
        Window first = steady.get(0);
        Window last = steady.get(steady.size() - 1);
        long minRows = steady.stream().mapToLong(Window::rows).min().orElseThrow();
        long maxRows = steady.stream().mapToLong(Window::rows).max().orElseThrow();
        out.append(String.format(Locale.ROOT, "rate: %,.0f keys/s before the first expiry (%d windows), %,.0f with the"
                        + " purge running (%d windows, worst %,.0f): %.2fx (target rate %,.0f); at most %.2f s behind"
                        + " schedule%n", rateBefore, before.size(), rateSteady, steady.size(), worst,
                rateSteady / rateBefore, rate, maxBehind));
        out.append(String.format(Locale.ROOT, "steady windows (t = %.0f..%.0f s): rows %,d..%,d; size %.1f -> %.1f MB"
                        + " (%+.1f %%)%n", first.endSeconds(), last.endSeconds(), minRows, maxRows, first.bytes() / 1e6,
                last.bytes() / 1e6, 100.0 * (last.bytes() - first.bytes()) / first.bytes()));
        return out.toString();
    }

    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    private static Thread started(String name, AtomicReference<Throwable> failure, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, name);
        t.start();
        return t;
    }

    /** Sleeps until {@code deadline} (nanoTime); false, at once, when {@code deadline} is at or past {@code end}. */
    private static boolean sleepUntil(long deadline, long end) {
        if (deadline >= end) {
            return false;
        }
        long wait;
        while ((wait = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(wait);
        }
        return true;
    }

    /** "90s", "6m", "1h" or "500ms" as a duration. */
    static Duration duration(String text) {
        String s = text.trim().toLowerCase(Locale.ROOT);
        if (s.equals("0")) {
            return Duration.ZERO;
        }
        if (s.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
        }
        long amount = Long.parseLong(s.substring(0, s.length() - 1));
        return switch (s.charAt(s.length() - 1)) {
            case 's' -> Duration.ofSeconds(amount);
            case 'm' -> Duration.ofMinutes(amount);
            case 'h' -> Duration.ofHours(amount);
            default -> throw new IllegalArgumentException("A duration reads like 90s, 6m, 1h or 500ms, not " + text);
        };
    }

    private static String text(Duration d) {
        return d.isZero() ? "0" : d.toMillis() % 60_000 == 0 ? d.toMinutes() + "m"
                : d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
    }
}
