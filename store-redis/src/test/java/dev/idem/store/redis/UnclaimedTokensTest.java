package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The tokens a failed claim leaves to the next claim of its keys: once, while half the lease is left, same fingerprint. */
class UnclaimedTokensTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final long HALF_LEASE = LEASE.toNanos() / 2;

    private final UnclaimedTokens tokens = new UnclaimedTokens();

    @Test
    void aRememberedTokenIsTakenOnceByTheNextClaimOfItsKey() {
        ClaimRequest order = request("order-1", "fp");
        tokens.remember(order, 42, UnclaimedTokens.reusableUntil(order, 1_000));

        assertThat(tokens.take(request("order-2", "fp"), 2_000)).isNull();
        assertThat(tokens.take(order, 2_000)).isEqualTo(new UnclaimedTokens.Entry(42, "fp", 1_000 + HALF_LEASE));
        assertThat(tokens.take(order, 2_000)).as("taken already").isNull();
        assertThat(tokens.size()).isZero();
    }

    @Test
    void aTokenIsNotSentAgainOnceHalfItsLeasePassedSinceItWasFirstSent() {
        ClaimRequest order = request("order-1", null);
        tokens.remember(order, 42, UnclaimedTokens.reusableUntil(order, 0));
        assertThat(tokens.take(order, HALF_LEASE)).isNotNull();

        // Sent again and failed again: it keeps the deadline of its first sending.
        tokens.remember(order, 42, HALF_LEASE);
        assertThat(tokens.take(order, HALF_LEASE + 1)).isNull();
        assertThat(tokens.size()).as("dropped").isZero();
    }

    @Test
    void aClaimWithAnotherFingerprintDrawsANewTokenAndDropsTheOldOne() {
        tokens.remember(request("order-1", "a"), 42, HALF_LEASE);

        assertThat(tokens.take(request("order-1", "b"), 0)).isNull();
        assertThat(tokens.take(request("order-1", "a"), 0)).isNull();
    }

    @Test
    void ofAKeyRepeatedInABatchTheFirstRequestsTokenIsKept() {
        ClaimRequest order = request("order-1", null);
        tokens.remember(order, 1, HALF_LEASE);
        tokens.remember(order, 2, HALF_LEASE);

        assertThat(tokens.take(order, 0).token()).isEqualTo(1);
    }

    @Test
    void atMostMaxEntriesAreKeptAndExpiredOnesMakeRoom() {
        for (int i = 0; i < UnclaimedTokens.MAX_ENTRIES; i++) {
            // Deadlines in the past: expired by the time the table is full.
            tokens.remember(request("old-" + i, null), i, System.nanoTime() - 1);
        }
        assertThat(tokens.size()).isEqualTo(UnclaimedTokens.MAX_ENTRIES);

        ClaimRequest order = request("order-1", null);
        tokens.remember(order, 42, UnclaimedTokens.reusableUntil(order, System.nanoTime()));

        assertThat(tokens.size()).isEqualTo(1);
        assertThat(tokens.take(order, System.nanoTime()).token()).isEqualTo(42);
    }

    @Test
    void aLeaseBeyondACenturyIsCappedAsTheScriptCapsIt() {
        ClaimRequest forever = new ClaimRequest(new StoreKey("orders", "order-1"), null, Duration.ofDays(365L * 10_000),
                Duration.ofMinutes(5));

        assertThat(UnclaimedTokens.reusableUntil(forever, 0)).isEqualTo(RedisDedupStore.LONGEST.toNanos() / 2);
    }

    private static ClaimRequest request(String id, String fingerprint) {
        return new ClaimRequest(new StoreKey("orders", id), fingerprint, LEASE, Duration.ofMinutes(5));
    }
}
