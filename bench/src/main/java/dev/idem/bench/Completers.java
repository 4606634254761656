package dev.idem.bench;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The threads completing the keys of a claimed batch in the store benchmarks, as many as a
 * pipeline's {@code concurrency}: one, or sixteen completing in parallel; and, for comparison, the batch
 * completed in one {@code completeAll} call ({@link #completeAll}).
 */
@State(Scope.Benchmark)
public class Completers {

    @Param({"1", "16"})
    int completers;
    ExecutorService pool;

    @Setup(Level.Trial)
    public void start() {
        pool = Executors.newFixedThreadPool(completers);
    }

    @TearDown(Level.Trial)
    public void stop() {
        pool.shutdownNow();
    }

    /**
     * Completes the acquired keys of a claimed batch, split into one slice per completer thread, as a
     * pipeline's workers would; returns how many completed.
     */
    int complete(DedupStore store, List<ClaimRequest> requests, List<ClaimResult> results, Duration retention)
            throws Exception {
        int batch = requests.size();
        int sliceSize = (batch + completers - 1) / completers;
        List<Callable<Integer>> slices = new ArrayList<>(completers);
        for (int from = 0; from < batch; from += sliceSize) {
            int start = from;
            int end = Math.min(batch, from + sliceSize);
            slices.add(() -> {
                int done = 0;
                for (int i = start; i < end; i++) {
                    if (results.get(i) instanceof ClaimResult.Acquired owner
                            && store.complete(requests.get(i).key(), owner.token(), retention)) {
                        done++;
                    }
                }
                return done;
            });
        }
        if (slices.size() == 1) {
            return slices.get(0).call();
        }
        int done = 0;
        for (Future<Integer> slice : pool.invokeAll(slices)) {
            done += slice.get();
        }
        return done;
    }

    /**
     * Completes the acquired keys of a claimed batch in one {@code completeAll} call, as the runtime does with
     * the completions of handlers that finished within {@code commit.linger} of each other; returns how many
     * completed.
     */
    static int completeAll(DedupStore store, List<ClaimRequest> requests, List<ClaimResult> results,
            Duration retention) {
        List<CompletionRequest> completions = new ArrayList<>(requests.size());
        for (int i = 0; i < requests.size(); i++) {
            if (results.get(i) instanceof ClaimResult.Acquired owner) {
                completions.add(new CompletionRequest(requests.get(i).key(), owner.token(), retention));
            }
        }
        int done = 0;
        for (CompletionResult result : store.completeAll(completions)) {
            if (CompletionResult.COMPLETED.equals(result)) {
                done++;
            }
        }
        return done;
    }

    /**
     * Claims {@code requests}, each a fresh key, then completes them in one {@code completeAll}; throws unless every
     * one was acquired and completed. Returns how many completed.
     */
    static int claimAndCompleteAll(DedupStore store, List<ClaimRequest> requests, Duration retention) {
        int done = completeAll(store, requests, store.claim(requests), retention);
        if (done != requests.size()) {
            throw new IllegalStateException("Only " + done + " of " + requests.size()
                    + " keys were acquired and completed");
        }
        return done;
    }
}
