package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreKey;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CompletedKeysTest {

    private final AtomicLong now = new AtomicLong(1_000);

    @Test
    void forgetsTheOldestCompletionsPastTheBound() {
        CompletedKeys keys = new CompletedKeys(3, 0, now::get);
        for (int i = 1; i <= 5; i++) {
            keys.put(done("k" + i, 100), now.get());
        }

        assertThat(keys.size()).isEqualTo(3);
        assertThat(keys.get(key("k1"))).isNull();
        assertThat(keys.get(key("k2"))).isNull();
        for (int i = 3; i <= 5; i++) {
            assertThat(keys.get(key("k" + i))).as("k%d", i).isNotNull();
        }
    }

    @Test
    void aCompletionPastItsRetentionReadsAbsentAndLeavesAtTheHeadOnTheNextWrite() {
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        keys.put(done("old", 10), now.get());
        now.addAndGet(10);

        assertThat(keys.get(key("old"))).isNull();
        assertThat(keys.size()).as("not removed before a write").isEqualTo(1);
        keys.put(done("new", 10), now.get());
        assertThat(keys.size()).isEqualTo(1);
        assertThat(keys.get(key("new"))).isNotNull();
    }

    @Test
    void aShorterRetentionBehindALongerOneReadsAbsentOnceItEnds() {
        CompletedKeys keys = new CompletedKeys(100, 0, now::get);
        keys.put(done("long", 1_000), now.get());
        keys.put(done("short", 10), now.get());
        now.addAndGet(20);
        keys.put(done("later", 1_000), now.get());

        assertThat(keys.get(key("short"))).isNull();
        assertThat(keys.get(key("long"))).isNotNull();
        assertThat(keys.size()).as("held until it reaches the head").isEqualTo(3);
        keys.removeExpired();
        assertThat(keys.size()).isEqualTo(2);
    }

    @Test
    void theStaleEntryOfAKeyCompletedAgainNeverForgetsItsNewCompletion() {
        CompletedKeys keys = new CompletedKeys(2, 0, now::get);
        keys.put(done("a", 100), now.get());
        keys.remove(key("a"));
        keys.put(done("b", 100), now.get());
        CaffeineDedupStore.Done again = done("a", 100);
        keys.put(again, now.get());

        keys.put(done("c", 100), now.get());

        assertThat(keys.get(key("a"))).isSameAs(again);
        assertThat(keys.get(key("b"))).as("the oldest live completion").isNull();
        assertThat(keys.get(key("c"))).isNotNull();
        assertThat(keys.size()).isEqualTo(2);
    }

    @Test
    void theRingStaysWithinAFactorOfTheKeysHeldWhenKeysAreDeleted() {
        CompletedKeys keys = new CompletedKeys(1_000_000, 0, now::get);
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < 1_000; i++) {
                keys.put(done("r" + round + "-" + i, 1_000_000), now.get());
            }
            for (int i = 0; i < 1_000; i++) {
                keys.remove(key("r" + round + "-" + i));
            }
            keys.put(done("kept-" + round, 1_000_000), now.get());
        }

        assertThat(keys.size()).isEqualTo(50);
        assertThat(keys.ringLength()).isLessThanOrEqualTo(2_000);
        for (int round = 0; round < 50; round++) {
            assertThat(keys.get(key("kept-" + round))).as("kept-%d", round).isNotNull();
        }
    }

    @Test
    void growsPastItsInitialCapacityKeepingTheOrder() {
        CompletedKeys keys = new CompletedKeys(10_000, 16, now::get);
        for (int i = 0; i < 12_000; i++) {
            keys.put(done("k" + i, 1_000_000), now.get());
        }

        assertThat(keys.size()).isEqualTo(10_000);
        assertThat(keys.get(key("k1999"))).isNull();
        assertThat(keys.get(key("k2000"))).isNotNull();
        assertThat(keys.get(key("k11999"))).isNotNull();
    }

    private CaffeineDedupStore.Done done(String id, long retention) {
        return new CaffeineDedupStore.Done(key(id), 1, 1, null, now.get() + retention);
    }

    private static StoreKey key(String id) {
        return new StoreKey("ns", id);
    }
}
