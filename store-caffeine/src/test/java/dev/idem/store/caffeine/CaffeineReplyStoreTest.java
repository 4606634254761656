package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.ReplyStoreContract;
import dev.idem.testkit.TestPluginConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The replies' contract in memory, plus what is particular to this store: a reply leaves memory with its completion,
 * however the completed tier forgets it.
 */
class CaffeineReplyStoreTest extends ReplyStoreContract {

    private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();

    @Override
    protected ReplyStore createStore(ManualTicker ticker) {
        return (ReplyStore) provider.create(TestPluginConfig.defaults("store.caffeine", provider.configSpec()),
                new StoreContext(ticker));
    }

    @Test
    void replyOfACompletionTheFullTierForgotLeavesWithIt() {
        ManualTicker ticker = new ManualTicker();
        try (CaffeineDedupStore bounded = new CaffeineDedupStore(1, 0, ticker)) {
            StoreKey key = key("order-1");
            assertThat(bounded.completeWithReply(key, acquire(bounded, key).token(), RETENTION, reply("first")))
                    .isTrue();
            for (int i = 0; i < 100; i++) {
                StoreKey other = key("other-" + i);
                assertThat(bounded.completeWithReply(other, acquire(bounded, other).token(), RETENTION,
                        reply("other " + i))).isTrue();
            }

            assertThat(bounded.replyCount()).as("the replies held: the last completion's only").isEqualTo(1);
            assertThat(bounded.reply(key("other-99"))).contains(reply("other 99"));
            assertThat(bounded.reply(key)).isEmpty();
            Acquired fresh = acquire(bounded, key);
            assertThat(fresh.attempt()).as("forgotten by the size bound, claimed afresh").isEqualTo(1);
            assertThat(bounded.complete(key, fresh.token(), RETENTION)).isTrue();
            assertThat(bounded.reply(key)).isEmpty();
        }
    }

    @Test
    void replyLeavesWithItsCompletionsRetentionAndWithANewerCompletionOfItsKey() {
        ManualTicker ticker = new ManualTicker();
        try (CaffeineDedupStore store = new CaffeineDedupStore(1000, 0, ticker)) {
            StoreKey expiring = key("expiring");
            StoreKey again = key("again");
            assertThat(store.completeWithReply(expiring, acquire(store, expiring).token(), RETENTION, reply("e")))
                    .isTrue();
            assertThat(store.completeWithReply(again, acquire(store, again).token(), Duration.ofMinutes(1),
                    reply("a"))).isTrue();
            ticker.advance(Duration.ofMinutes(2));

            Acquired next = acquire(store, again);
            assertThat(store.complete(again, next.token(), RETENTION)).isTrue();
            assertThat(store.replyCount()).as("the earlier life's reply left with its completion").isEqualTo(1);

            ticker.advance(RETENTION);
            store.cleanUp();
            assertThat(store.replyCount()).as("left with the expired completions").isZero();
        }
    }

    @Test
    void replyOfACompletionTooLongToRememberIsNotKept() {
        ManualTicker ticker = new ManualTicker();
        try (CaffeineDedupStore store = new CaffeineDedupStore(1000, 0, ticker)) {
            StoreKey huge = key("x".repeat(CompletedKeys.MAX_ENTRY_CHARS + 1));

            assertThat(store.completeWithReply(huge, acquire(store, huge).token(), RETENTION, reply("r"))).isTrue();

            assertThat(store.reply(huge)).isEmpty();
            assertThat(store.replyCount()).isZero();
        }
    }

    @Test
    void deleteAndPurgeLeaveNoReplyBehind() {
        ManualTicker ticker = new ManualTicker();
        try (CaffeineDedupStore store = new CaffeineDedupStore(1000, 0, ticker)) {
            StoreKey deleted = key("deleted");
            StoreKey purged = key("purged");
            assertThat(store.completeWithReply(deleted, acquire(store, deleted).token(), RETENTION, reply("d")))
                    .isTrue();
            assertThat(store.completeWithReply(purged, acquire(store, purged).token(), RETENTION, reply("p")))
                    .isTrue();

            assertThat(store.delete(deleted)).isTrue();
            assertThat(store.purge(namespace(), Instant.now().plus(RETENTION.multipliedBy(2)), null, 10)
                    .deleted()).isEqualTo(1);

            assertThat(store.replyCount()).isZero();
        }
    }

    private static Acquired acquire(CaffeineDedupStore store, StoreKey key) {
        ClaimResult result = store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
        assertThat(result).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }
}
