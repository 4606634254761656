package dev.idem.bench;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Acquires every key, completes every token, remembers nothing: what the pipeline costs without a store. No
 * duplicate is ever found with it, so every repeat runs its handler again. For benchmarks only; thread-safe.
 */
public final class BaselineStore implements DedupStore {
    private final AtomicLong tokens = new AtomicLong();

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        ClaimResult[] results = new ClaimResult[requests.size()];
        for (int i = 0; i < results.length; i++) {
            results[i] = new ClaimResult.Acquired(tokens.incrementAndGet(), 1);
        }
        return List.of(results);
    }

    @Override
    public boolean complete(StoreKey key, long token, Duration retention) {
        return true;
    }

    @Override
    public boolean release(StoreKey key, long token) {
        return true;
    }

    @Override
    public boolean renew(StoreKey key, long token, Duration lease) {
        return true;
    }

    @Override
    public void close() {
    }
}
