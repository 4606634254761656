package dev.idem.testkit;

import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;

/** The contract is passable: the reference store passes all of it. */
class ReferenceDedupStoreTest extends DedupStoreContract {

    private ReferenceDedupStore store;

    @Override
    protected DedupStore createStore(ManualTicker ticker) {
        store = new ReferenceDedupStore(ticker, ReferenceDedupStore.Flaw.NONE);
        return store;
    }

    @Override
    protected boolean failWritesOf(StoreKey key) {
        store.failWritesOf(key);
        return true;
    }
}
