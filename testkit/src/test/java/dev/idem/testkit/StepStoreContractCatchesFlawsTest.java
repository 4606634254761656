package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs {@link StepStoreContract}, through the real JUnit launcher, against a store that keeps steps right (one lock,
 * one map) and against copies of it with one deliberate flaw each, and checks that the test meant to catch the flaw
 * fails: a store that records for any token, one that checks the token and writes later without holding its lock
 * (so a takeover slips in between), one that forgets steps on a release, one whose steps outlive their key.
 */
class StepStoreContractCatchesFlawsTest {

    enum Flaw { NONE, IGNORES_TOKENS, CHECKS_THEN_WRITES, FORGETS_ON_RELEASE, OUTLIVES_THE_KEY }

    static Stream<Arguments> flaws() {
        return Stream.of(
                Arguments.of(IgnoresTokens.class, "anotherTokenNeitherReadsNorRecords"),
                Arguments.of(IgnoresTokens.class, "ownerWhoseKeyWasTakenOverRecordsNothingNeitherNewNorOverTheNewOwners"),
                Arguments.of(ChecksThenWrites.class, "recordRacingATakeoverIsEitherSeenByItOrRefused"),
                Arguments.of(ForgetsOnRelease.class, "releasedKeyKeepsItsStepsForTheNextClaimAndItsFormerOwnerRecordsNoMore"),
                Arguments.of(OutlivesTheKey.class, "stepsOfACompletedKeyAreNeverSeenOnceItsRetentionPassedAndItIsClaimedAfresh"),
                Arguments.of(OutlivesTheKey.class, "stepsOfAnAbandonedClaimAreNeverSeenOnceItIsForgottenAndTheKeyClaimedAfresh"));
    }

    @ParameterizedTest(name = "{0} fails {1}")
    @org.junit.jupiter.params.provider.MethodSource("flaws")
    void contractFailsStoreWithFlaw(Class<? extends StepStoreContract> flawed, String catchingTest) {
        assertThat(failedTests(flawed)).contains(catchingTest);
    }

    @Test
    void contractPassesTheReferenceStoreThroughLauncher() {
        assertThat(failedTests(Reference.class)).isEmpty();
    }

    private static List<String> failedTests(Class<?> testClass) {
        List<String> failed = new ArrayList<>();
        TestExecutionListener listener = new TestExecutionListener() {
            @Override
            public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL && test.isTest()) {
                    test.getSource().filter(MethodSource.class::isInstance).map(MethodSource.class::cast)
                            .ifPresent(source -> failed.add(source.getMethodName()));
                }
            }
        };
        LauncherFactory.create().execute(LauncherDiscoveryRequestBuilder.request().selectors(selectClass(testClass))
                .build(), listener);
        return failed;
    }

    // ---------------------------------------------------------------- the store and its flawed copies

    static class Reference extends StepStoreContract {
        @Override
        protected StepStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.NONE);
        }
    }

    static class IgnoresTokens extends StepStoreContract {
        @Override
        protected StepStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.IGNORES_TOKENS);
        }
    }

    static class ChecksThenWrites extends StepStoreContract {
        @Override
        protected StepStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.CHECKS_THEN_WRITES);
        }
    }

    static class ForgetsOnRelease extends StepStoreContract {
        @Override
        protected StepStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.FORGETS_ON_RELEASE);
        }
    }

    static class OutlivesTheKey extends StepStoreContract {
        @Override
        protected StepStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.OUTLIVES_THE_KEY);
        }
    }

    /** One lock, one map of keys, one of steps; the flaw, if any, where it says. */
    static final class Store implements StepStore {
        private record Key(long token, int attempts, boolean completed, long leaseUntil, long retention,
                long forgetAt) {
        }

        private record Kept(byte[] value, long until) {
        }

        private final LongSupplier ticker;
        private final Flaw flaw;
        private final Map<StoreKey, Key> keys = new HashMap<>();
        private final Map<StoreKey, Map<String, Kept>> steps = new HashMap<>();
        private final AtomicLong tokens = new AtomicLong(1000);

        Store(LongSupplier ticker, Flaw flaw) {
            this.ticker = ticker;
            this.flaw = flaw;
        }

        @Override
        public synchronized List<ClaimResult> claim(List<ClaimRequest> requests) {
            List<ClaimResult> results = new ArrayList<>();
            long now = ticker.getAsLong();
            for (ClaimRequest r : requests) {
                Key k = live(r.key(), now);
                if (k != null && k.completed()) {
                    results.add(new ClaimResult.Duplicate(true));
                } else if (k != null && k.leaseUntil() - now > 0) {
                    results.add(new ClaimResult.InProgress(Duration.ofNanos(k.leaseUntil() - now)));
                } else {
                    long token = tokens.incrementAndGet();
                    int attempt = k == null ? 1 : k.attempts() + 1;
                    long lease = now + r.lease().toNanos();
                    keys.put(r.key(), new Key(token, attempt, false, lease, r.retention().toNanos(),
                            lease + r.retention().toNanos()));
                    results.add(new ClaimResult.Acquired(token, attempt));
                }
            }
            return results;
        }

        private Key live(StoreKey key, long now) {
            Key k = keys.get(key);
            return k == null || k.forgetAt() - now <= 0 ? null : k;
        }

        private Key owned(StoreKey key, long token) {
            Key k = live(key, ticker.getAsLong());
            return k != null && !k.completed() && (k.token() == token || flaw == Flaw.IGNORES_TOKENS) ? k : null;
        }

        @Override
        public synchronized boolean complete(StoreKey key, long token, Duration retention) {
            long now = ticker.getAsLong();
            Key k = live(key, now);
            if (k != null && k.completed() && k.token() == token) {
                return true;
            }
            if (k == null || k.token() != token) {
                return false;
            }
            keys.put(key, new Key(token, k.attempts(), true, now, 0, now + retention.toNanos()));
            return true;
        }

        @Override
        public synchronized boolean release(StoreKey key, long token) {
            if (owned(key, token) == null) {
                return false;
            }
            keys.remove(key);
            if (flaw == Flaw.FORGETS_ON_RELEASE) {
                steps.remove(key);
            }
            return true;
        }

        @Override
        public synchronized boolean renew(StoreKey key, long token, Duration lease) {
            Key k = owned(key, token);
            if (k == null) {
                return false;
            }
            long until = ticker.getAsLong() + lease.toNanos();
            keys.put(key, new Key(k.token(), k.attempts(), false, until, k.retention(), until + k.retention()));
            return true;
        }

        @Override
        public synchronized Optional<Map<String, byte[]>> steps(StoreKey key, long token) {
            if (owned(key, token) == null) {
                return Optional.empty();
            }
            long now = ticker.getAsLong();
            Map<String, byte[]> live = new HashMap<>();
            steps.getOrDefault(key, Map.of()).forEach((name, kept) -> {
                if (kept.until() - now > 0) {
                    live.put(name, kept.value().clone());
                }
            });
            return Optional.of(live);
        }

        @Override
        public boolean recordStep(StoreKey key, long token, String name, byte[] value) {
            StepStore.check(name, value);
            Key k;
            long now;
            synchronized (this) {
                k = owned(key, token);
                now = ticker.getAsLong();
            }
            if (k == null) {
                return false;
            }
            if (flaw == Flaw.CHECKS_THEN_WRITES) {
                // The window a store without an atomic check-and-write leaves: a takeover lands in it.
                LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
            }
            synchronized (this) {
                if (flaw != Flaw.CHECKS_THEN_WRITES && owned(key, token) == null) {
                    return false;
                }
                long from = k.leaseUntil() - now > 0 ? now : k.leaseUntil();
                long until = flaw == Flaw.OUTLIVES_THE_KEY ? Long.MAX_VALUE / 2 + now : from + k.retention();
                steps.computeIfAbsent(key, x -> new HashMap<>()).put(name, new Kept(value.clone(), until));
                return true;
            }
        }

        @Override
        public synchronized void close() {
            keys.clear();
            steps.clear();
        }
    }
}
