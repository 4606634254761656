package dev.idem.bench;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The threads completing the keys of a claimed batch in the store benchmarks, as many as a
 * pipeline's {@code concurrency}: one, or sixteen completing in parallel.
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
}
