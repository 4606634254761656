package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.StepStoreContract;
import dev.idem.testkit.TestPluginConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The durable steps' contract in memory, plus what is particular to this store: steps go with the completion. */
class CaffeineStepStoreTest extends StepStoreContract {

    private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();

    @Override
    protected StepStore createStore(ManualTicker ticker) {
        return (StepStore) provider.create(TestPluginConfig.defaults("store.caffeine", provider.configSpec()),
                new StoreContext(ticker));
    }

    @Test
    void keyWhoseCompletionTheFullTierForgotEarlyIsClaimedAfreshWithoutItsSteps() {
        ManualTicker ticker = new ManualTicker();
        try (CaffeineDedupStore bounded = new CaffeineDedupStore(1, 0, ticker)) {
            StoreKey key = key("order-1");
            Acquired owner = (Acquired) bounded.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)))
                    .get(0);
            assertThat(bounded.recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();
            assertThat(bounded.complete(key, owner.token(), RETENTION)).isTrue();
            for (int i = 0; i < 100; i++) {
                StoreKey other = key("other-" + i);
                Acquired o = (Acquired) bounded.claim(List.of(new ClaimRequest(other, null, LEASE, CLAIM_RETENTION)))
                        .get(0);
                bounded.complete(other, o.token(), RETENTION);
            }

            ClaimResult again = bounded.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);

            assertThat(again).as("the completion, forgotten by the size bound within its retention")
                    .isInstanceOfSatisfying(Acquired.class, fresh -> {
                        assertThat(fresh.attempt()).isEqualTo(1);
                        assertThat(bounded.steps(key, fresh.token())).hasValueSatisfying(
                                steps -> assertThat(steps).as("the steps of its earlier life").isEmpty());
                    });
        }
    }
}
