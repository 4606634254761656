package dev.idem.testkit.fault;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The runs of a handler under test, by idempotency key, for the checks of a fault test: which keys never ran (lost),
 * which ran more than once and how often (re-runs). A handler calls {@link #record} once per run.
 *
 * <p>Thread-safe: {@link #record} may be called from every worker at once; the readings are snapshots.
 */
public final class HandlerRuns {

    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    /** Counts one run of the handler for {@code key}. */
    public void record(String key) {
        runs.computeIfAbsent(Objects.requireNonNull(key, "key"), k -> new AtomicInteger()).incrementAndGet();
    }

    /** How often the handler ran for {@code key}; 0 if never. */
    public int runs(String key) {
        AtomicInteger n = runs.get(key);
        return n == null ? 0 : n.get();
    }

    /** The keys that ran at least once. */
    public Set<String> keys() {
        return Set.copyOf(runs.keySet());
    }

    /** Runs in all. */
    public long total() {
        return runs.values().stream().mapToLong(AtomicInteger::get).sum();
    }

    /** Runs beyond the first of each key. */
    public long reruns() {
        return runs.values().stream().mapToLong(n -> n.get() - 1).sum();
    }

    /** The keys that ran more than once, sorted. */
    public List<String> rerunKeys() {
        return runs.entrySet().stream().filter(e -> e.getValue().get() > 1).map(Map.Entry::getKey).sorted().toList();
    }

    /** Those of {@code keys} that never ran, sorted, each once. */
    public List<String> neverRan(Collection<String> keys) {
        return keys.stream().distinct().filter(k -> !runs.containsKey(k)).sorted().toList();
    }
}
