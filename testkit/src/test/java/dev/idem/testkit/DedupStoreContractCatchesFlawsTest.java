package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ReferenceDedupStore.Flaw;
import java.util.ArrayList;
import java.util.List;
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
 * Runs the contract, through the real JUnit launcher, against stores with one deliberate flaw each,
 * and checks that the test meant to catch the flaw fails. A contract that passes broken stores
 * protects nothing.
 */
class DedupStoreContractCatchesFlawsTest {

    static Stream<Arguments> flaws() {
        return Stream.of(
                Arguments.of(IgnoresTokens.class, "staleOwnerCannotCompleteReleaseOrRenewAfterTakeover"),
                Arguments.of(JoinsKeyParts.class, "namespaceAndIdAreNotJoinedAmbiguously"),
                Arguments.of(ForgetsExpiredClaims.class, "claimAfterLeaseEndsTakesOverWithNextAttemptAndNewToken"),
                Arguments.of(ForgetsExpiredClaims.class, "expiredClaimIsRememberedForItsAttemptsUntilLeaseEndPlusRetention"),
                Arguments.of(IgnoresCase.class, "keysThatDifferOnlyInCaseSpaceOrNormalisationAreDistinct"),
                Arguments.of(Racy.class, "concurrentClaimsOfSameKeysAcquireEachKeyExactlyOnce"),
                // Only the invariant check after the test sees tokens repeat across keys here.
                Arguments.of(ReusesTokens.class, "batchResultsComeBackInRequestOrder"),
                Arguments.of(IgnoresTokens.class, "recordStartWithAnotherTokenIsRejectedAndRecordsNothing"),
                Arguments.of(IgnoresTokens.class, "recordStartByStaleOwnerAfterTakeoverIsRejectedAndRecordsNothing"),
                Arguments.of(RecordsNoStarts.class, "recordStartOfClaimedKeyCountsStartsFromOne"),
                Arguments.of(RecordsNoStarts.class, "recordStartOfAbsentKeyIsRejectedAndLeavesNothingBehind"),
                Arguments.of(RecordsNoStarts.class, "concurrentRecordStartsOfOneKeyCountEveryStartOnce"),
                Arguments.of(ForgetsStartsOnTakeover.class, "recordedStartsSurviveTakeoverAfterLeaseRanOut"),
                Arguments.of(ForgetsStartsOnTakeover.class,
                        "recordedStartsSurviveSeveralTakeoversAndCountOnlyRecordedStarts"),
                Arguments.of(RenewsLeaseOnStart.class, "recordStartNeitherRenewsTheLeaseNorCountsAnAttempt"),
                Arguments.of(Racy.class, "concurrentRecordStartsOfOneKeyCountEveryStartOnce"),
                Arguments.of(BatchIgnoresTokens.class, "completeAllFencesEachKeyByItsOwnToken"),
                Arguments.of(BatchIgnoresTokens.class, "completeAllIsIdempotentForTheTokenThatCompletedTheKey"),
                Arguments.of(BatchIgnoresTokens.class, "completeAllOfKeyRepeatedInTheBatchAnswersEveryRepeat"),
                Arguments.of(BatchIgnoresTokens.class, "completeAllOfLargeBatchAnswersAsOneByOneCompletesWould"),
                Arguments.of(BatchAnswersInKeyOrder.class, "completeAllAnswersInRequestOrder"),
                Arguments.of(BatchAnswersInKeyOrder.class, "completeAllOfLargeBatchAnswersAsOneByOneCompletesWould"),
                Arguments.of(BatchUsesFirstRetention.class, "completeAllRemembersEachKeyForItsOwnRetention"),
                Arguments.of(BatchFailsWhole.class, "completeAllReportsOnlyTheKeyWhoseWriteFailedAsFailed"));
    }

    @ParameterizedTest(name = "{0} fails {1}")
    @org.junit.jupiter.params.provider.MethodSource("flaws")
    void contractFailsStoreWithFlaw(Class<? extends DedupStoreContract> flawed, String catchingTest) {
        assertThat(failedTests(flawed)).contains(catchingTest);
    }

    @Test
    void contractPassesReferenceStoreThroughLauncher() {
        assertThat(failedTests(ReferenceDedupStoreTest.class)).isEmpty();
    }

    @Test
    void contractPassesStoreThatLeavesCompleteAllToTheSpiDefaultThroughLauncher() {
        assertThat(failedTests(SpiDefaultCompleteAllTest.class)).isEmpty();
    }

    private static List<String> failedTests(Class<?> testClass) {
        List<String> failed = new ArrayList<>();
        TestExecutionListener listener = new TestExecutionListener() {
            @Override
            public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL
                        && test.getSource().orElse(null) instanceof MethodSource method) {
                    failed.add(method.getMethodName());
                }
            }
        };
        LauncherFactory.create().execute(
                LauncherDiscoveryRequestBuilder.request().selectors(selectClass(testClass)).build(), listener);
        return failed;
    }

    abstract static class Flawed extends DedupStoreContract {
        private final Flaw flaw;
        private ReferenceDedupStore store;

        Flawed(Flaw flaw) {
            this.flaw = flaw;
        }

        @Override
        protected DedupStore createStore(ManualTicker ticker) {
            store = new ReferenceDedupStore(ticker, flaw);
            return store;
        }

        @Override
        protected boolean failWritesOf(StoreKey key) {
            store.failWritesOf(key);
            return true;
        }
    }

    static class IgnoresTokens extends Flawed {
        IgnoresTokens() {
            super(Flaw.IGNORES_TOKENS);
        }
    }

    static class JoinsKeyParts extends Flawed {
        JoinsKeyParts() {
            super(Flaw.JOINS_KEY_PARTS);
        }
    }

    static class ForgetsExpiredClaims extends Flawed {
        ForgetsExpiredClaims() {
            super(Flaw.FORGETS_EXPIRED_CLAIMS);
        }
    }

    static class IgnoresCase extends Flawed {
        IgnoresCase() {
            super(Flaw.IGNORES_CASE);
        }
    }

    static class Racy extends Flawed {
        Racy() {
            super(Flaw.RACY);
        }
    }

    static class ReusesTokens extends Flawed {
        ReusesTokens() {
            super(Flaw.REUSES_TOKENS);
        }
    }

    static class RecordsNoStarts extends Flawed {
        RecordsNoStarts() {
            super(Flaw.RECORDS_NO_STARTS);
        }
    }

    static class ForgetsStartsOnTakeover extends Flawed {
        ForgetsStartsOnTakeover() {
            super(Flaw.FORGETS_STARTS_ON_TAKEOVER);
        }
    }

    static class RenewsLeaseOnStart extends Flawed {
        RenewsLeaseOnStart() {
            super(Flaw.RENEWS_LEASE_ON_START);
        }
    }

    static class BatchIgnoresTokens extends Flawed {
        BatchIgnoresTokens() {
            super(Flaw.BATCH_IGNORES_TOKENS);
        }
    }

    static class BatchAnswersInKeyOrder extends Flawed {
        BatchAnswersInKeyOrder() {
            super(Flaw.BATCH_ANSWERS_IN_KEY_ORDER);
        }
    }

    static class BatchUsesFirstRetention extends Flawed {
        BatchUsesFirstRetention() {
            super(Flaw.BATCH_USES_FIRST_RETENTION);
        }
    }

    static class BatchFailsWhole extends Flawed {
        BatchFailsWhole() {
            super(Flaw.BATCH_FAILS_WHOLE);
        }
    }
}
