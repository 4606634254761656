package dev.idem.bench;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/** Keys per second in the store benchmarks, reported beside the calls (batches) per second. */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.OPERATIONS)
public class Keys {

    public long keys;

    @Setup(Level.Iteration)
    public void reset() {
        keys = 0;
    }
}
