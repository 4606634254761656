package dev.idem.testkit;

import dev.idem.spi.DedupStore;

/** The contract is passable: the reference store passes all of it. */
class ReferenceDedupStoreTest extends DedupStoreContract {

    @Override
    protected DedupStore createStore(ManualTicker ticker) {
        return new ReferenceDedupStore(ticker, ReferenceDedupStore.Flaw.NONE);
    }
}
