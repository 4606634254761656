package dev.idem.runtime.internal.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.ClaimResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link LeaseKeeper} on its own, run by hand on the manual ticker: renews held claims once a third of the lease
 * passed, marks a lease taken over, and interrupts runs past {@code handler-timeout}; and {@link Run}'s handshake
 * that keeps such an interrupt from outliving its run.
 */
class LeaseKeeperTest {

    private final StageFixture f = new StageFixture("lease: 3s\nhandler-timeout: 2s");
    private final LeaseKeeper keeper = new LeaseKeeper(f.state, f.inFlight, f.storeCalls);
    private Thread runner;

    @AfterEach
    void close() throws InterruptedException {
        if (runner != null) {
            runner.interrupt();
            runner.join(TimeUnit.SECONDS.toMillis(5));
            assertThat(runner.isAlive()).isFalse();
        }
        f.close();
    }

    /** A claimed work in a dispatched batch, where the keeper looks. */
    private Work dispatched(String key) {
        Work w = f.work(key, "p");
        f.acquire(w);
        f.inFlight.track(new Batch(List.of(w), f.ticker.getAsLong()));
        return w;
    }

    @Test
    void aHeldClaimIsRenewedOnceAThirdOfTheLeasePassedAndNotBefore() {
        Work w = dispatched("k1");
        long claimedAt = f.ticker.getAsLong();

        f.ticker.advance(Duration.ofMillis(999));
        keeper.run();
        assertThat(f.store.calls("renew")).isZero();
        assertThat(w.claim.leaseRenewedAtNanos()).isEqualTo(claimedAt);

        f.ticker.advance(Duration.ofMillis(1));
        keeper.run();
        assertThat(f.store.calls("renew")).isEqualTo(1);
        assertThat(w.claim.leaseRenewedAtNanos()).isEqualTo(f.ticker.getAsLong());

        keeper.run();
        assertThat(f.store.calls("renew")).as("not again before another third passed").isEqualTo(1);

        // Claimed for 3 s, renewed at 1 s for 3 s more: another consumer still finds the key busy at 3.5 s.
        f.ticker.advance(Duration.ofMillis(2500));
        assertThat(f.claimInStore(f.work("k1", "p"))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(w.claim.leaseLost()).isFalse();
    }

    @Test
    void aClaimInsideItsTransactionIsNotRenewed() {
        Work w = dispatched("k1");
        w.run.inTransaction = true;

        f.ticker.advance(Duration.ofSeconds(2));
        keeper.run();

        assertThat(f.store.calls("renew")).isZero();
    }

    @Test
    void aClaimNoLongerHeldOrAlreadySettledIsNotRenewed() {
        Work completed = dispatched("k1");
        completed.claim.ended();
        Work acked = dispatched("k2");
        f.settlement.ack(acked, f.outcomes.processed);

        f.ticker.advance(Duration.ofSeconds(2));
        keeper.run();

        assertThat(f.store.calls("renew")).isZero();
    }

    @Test
    void aRenewalTheStoreRefusesMarksTheLeaseLost() {
        Work w = dispatched("k1");
        f.takeOver(w);

        keeper.run();

        assertThat(f.store.calls("renew")).isEqualTo(1);
        assertThat(w.claim.leaseLost()).isTrue();
        f.ticker.advance(Duration.ofSeconds(2));
        keeper.run();
        assertThat(f.store.calls("renew")).as("a lost lease is not renewed again").isEqualTo(1);
    }

    @Test
    void aRenewalThatFailsIsTriedAgainOnTheNextRound() {
        Work w = dispatched("k1");
        long claimedAt = f.ticker.getAsLong();
        f.store.fail("renew", 1);

        f.ticker.advance(Duration.ofSeconds(1));
        keeper.run();
        assertThat(w.claim.leaseRenewedAtNanos()).isEqualTo(claimedAt);
        assertThat(w.claim.leaseLost()).isFalse();

        keeper.run();
        assertThat(f.store.calls("renew")).isEqualTo(2);
        assertThat(w.claim.leaseRenewedAtNanos()).isEqualTo(f.ticker.getAsLong());
    }

    @Test
    void aRunPastItsHandlerTimeoutIsInterruptedAndNotBefore() {
        Work w = dispatched("k1");
        AtomicBoolean sawInterrupt = new AtomicBoolean();
        AtomicBoolean interruptedAfterEnd = new AtomicBoolean(true);
        CountDownLatch never = new CountDownLatch(1);
        runner = new Thread(() -> {
            w.run.begin(f.ticker.getAsLong() + f.config.handlerTimeout().toNanos());
            try {
                never.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                sawInterrupt.set(true);
            } finally {
                w.run.end();
                interruptedAfterEnd.set(Thread.currentThread().isInterrupted());
            }
        }, "test-handler");
        runner.start();
        await().until(w.run::running);

        f.ticker.advance(Duration.ofMillis(1999));
        keeper.run();
        assertThat(w.run.running()).as("still running within its timeout").isTrue();
        assertThat(sawInterrupt).isFalse();

        f.ticker.advance(Duration.ofMillis(1));
        keeper.run();

        await().untilTrue(sawInterrupt);
        await().until(() -> !runner.isAlive());
        assertThat(interruptedAfterEnd).isFalse();
        assertThat(w.run.running()).isFalse();
    }

    @Test
    void endingARunClearsAnInterruptThatLandedSoItCannotHitTheNextStoreCall() {
        Work w = dispatched("k1");
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicReference<Boolean> interruptedBeforeEnd = new AtomicReference<>();
        AtomicReference<Boolean> interruptedAfterEnd = new AtomicReference<>();
        runner = new Thread(() -> {
            w.run.begin(f.ticker.getAsLong() + f.config.handlerTimeout().toNanos());
            // A handler that ignores interrupts: it spins on until the keeper has interrupted it.
            while (!interrupted.get()) {
                Thread.onSpinWait();
            }
            interruptedBeforeEnd.set(Thread.currentThread().isInterrupted());
            w.run.end();
            interruptedAfterEnd.set(Thread.currentThread().isInterrupted());
        }, "test-handler");
        runner.start();
        await().until(w.run::running);

        f.ticker.advance(f.config.handlerTimeout());
        keeper.run();
        interrupted.set(true);

        await().until(() -> interruptedAfterEnd.get() != null);
        assertThat(interruptedBeforeEnd.get()).as("the interrupt landed").isTrue();
        assertThat(interruptedAfterEnd.get()).as("and end() cleared it").isFalse();
    }

    @Test
    void aRunThatEndedIsNotInterrupted() {
        Work w = dispatched("k1");
        w.run.begin(f.ticker.getAsLong() + f.config.handlerTimeout().toNanos());
        w.run.end();

        f.ticker.advance(Duration.ofSeconds(5));
        keeper.run();

        assertThat(Thread.interrupted()).isFalse();
    }

    @Test
    void itRunsOftenEnoughForTheLeaseAndTheHandlerTimeout() {
        assertThat(keeper.periodNanos()).as("lease 3s / 6, handler-timeout 2s / 4")
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(500));
        StageFixture quick = new StageFixture("handler-timeout: 8ms");
        try {
            assertThat(new LeaseKeeper(quick.state, quick.inFlight, quick.storeCalls).periodNanos())
                    .as("never below 5 ms").isEqualTo(TimeUnit.MILLISECONDS.toNanos(5));
        } finally {
            quick.close();
        }
        StageFixture defaults = new StageFixture();
        try {
            assertThat(new LeaseKeeper(defaults.state, defaults.inFlight, defaults.storeCalls).periodNanos())
                    .as("never above 1 s").isEqualTo(TimeUnit.SECONDS.toNanos(1));
        } finally {
            defaults.close();
        }
    }
}
