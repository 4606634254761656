package dev.idem.testkit;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.List;

/**
 * A store written before {@code completeAll} existed passes the contract through the SPI's default, which
 * completes one key after another: the reference store with every method but {@code completeAll} passed on.
 */
class SpiDefaultCompleteAllTest extends DedupStoreContract {

    private ReferenceDedupStore reference;

    @Override
    protected DedupStore createStore(ManualTicker ticker) {
        reference = new ReferenceDedupStore(ticker, ReferenceDedupStore.Flaw.NONE);
        return new DedupStore() {
            @Override
            public List<ClaimResult> claim(List<ClaimRequest> requests) {
                return reference.claim(requests);
            }

            @Override
            public boolean complete(StoreKey key, long token, Duration retention) {
                return reference.complete(key, token, retention);
            }

            @Override
            public boolean release(StoreKey key, long token) {
                return reference.release(key, token);
            }

            @Override
            public boolean renew(StoreKey key, long token, Duration lease) {
                return reference.renew(key, token, lease);
            }

            @Override
            public int recordStart(StoreKey key, long token) {
                return reference.recordStart(key, token);
            }

            @Override
            public void close() {
                reference.close();
            }
        };
    }

    @Override
    protected boolean failWritesOf(StoreKey key) {
        reference.failWritesOf(key);
        return true;
    }
}
