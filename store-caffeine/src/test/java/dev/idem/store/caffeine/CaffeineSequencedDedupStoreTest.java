package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.SequencedDedupStoreContract;
import dev.idem.testkit.TestPluginConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The sequence guard's contract on the in-memory store, plus what its size bound must leave alone. */
class CaffeineSequencedDedupStoreTest extends SequencedDedupStoreContract {

    private static final CaffeineDedupStoreProvider PROVIDER = new CaffeineDedupStoreProvider();

    @Override
    protected SequencedDedupStore createStore(ManualTicker ticker) {
        return (SequencedDedupStore) PROVIDER.create(TestPluginConfig.defaults("store.caffeine", PROVIDER.configSpec()),
                new StoreContext(ticker));
    }

    @Test
    void sizeBoundOfCompletedKeysNeverEvictsAWatermark() {
        try (CaffeineDedupStore small = (CaffeineDedupStore) PROVIDER.create(
                TestPluginConfig.defaults("store.caffeine", PROVIDER.configSpec()).with("maximum-size", 5L),
                new StoreContext(ticker()))) {
            for (int i = 1; i <= 200; i++) {
                StoreKey key = key("event-" + i);
                Acquired owner = (Acquired) small.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)))
                        .get(0);
                assertThat(small.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(aggregate("account-" + i), i)))
                        .isTrue();
            }
            small.cleanUp();

            assertThat(small.completedCount()).as("completed keys, bounded").isEqualTo(5);
            for (int i = 1; i <= 200; i++) {
                assertThat(small.watermark(aggregate("account-" + i))).as("watermark of account-%s", i).isEqualTo(i);
            }
        }
    }

    @Test
    void closeForgetsTheWatermarks() {
        CaffeineDedupStore store = (CaffeineDedupStore) store();
        completeAndAdvance(key("event-1"), aggregate("account-1"), 1);

        store.close();

        assertThat(store.watermark(aggregate("account-1"))).isZero();
    }
}
