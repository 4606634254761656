package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredReply;
import dev.idem.spi.TransactionalDedupStore;
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
 * Runs {@link ReplyStoreContract}, through the real JUnit launcher, against a store that keeps replies right (one
 * lock, one map of keys, one of replies tied to the token of the completion they came with, a transactional mode that
 * writes a run's reply with its key) and against copies of it with one deliberate flaw each, and checks that the test
 * meant to catch the flaw fails: a store that completes for any token, one that writes the reply a moment after the
 * completion, one that keeps a reply per key whatever became of the completion it came with (and records a
 * transactional reply at once, outside the run), one that checks no size, one whose batch drops the replies, and one
 * whose transactional runs lose their replies.
 */
class ReplyStoreContractCatchesFlawsTest {

    enum Flaw {
        NONE, IGNORES_TOKENS, REPLY_AFTER_COMPLETION, REPLY_BY_KEY_ONLY, NO_SIZE_CHECK, DROPS_BATCH_REPLIES,
        DROPS_TRANSACTIONAL_REPLIES
    }

    static Stream<Arguments> flaws() {
        return Stream.of(
                Arguments.of(IgnoresTokens.class, "anotherTokenStoresNoReplyAndCompletesNothing"),
                Arguments.of(IgnoresTokens.class, "ownerWhoseKeyWasTakenOverStoresNoReply"),
                Arguments.of(ReplyAfterCompletion.class, "whoeverSeesTheCompletionSeesItsReply"),
                Arguments.of(ReplyByKeyOnly.class, "replyIsForgottenWithItsCompletionAndNeverSeenInTheKeysNextLife"),
                Arguments.of(ReplyByKeyOnly.class, "replyRecordedInARunThatThrowsIsRolledBackWithIt"),
                Arguments.of(NoSizeCheck.class, "replyOneByteHeavierIsRefusedBeforeAnythingIsWritten"),
                Arguments.of(DropsBatchReplies.class, "completeAllStoresEachRequestsReplyWithItsCompletion"),
                Arguments.of(DropsBatchReplies.class, "completeAllOfManyKeysKeepsEveryReply"),
                Arguments.of(DropsTransactionalReplies.class, "replyRecordedInARunThatCommitsIsStoredWithItsKey"),
                Arguments.of(DropsTransactionalReplies.class, "groupMembersRepliesFollowTheirOwnSavepoint"));
    }

    @ParameterizedTest(name = "{0} fails {1}")
    @org.junit.jupiter.params.provider.MethodSource("flaws")
    void contractFailsStoreWithFlaw(Class<? extends ReplyStoreContract> flawed, String catchingTest) {
        assertThat(failedTests(flawed)).contains(catchingTest);
    }

    @Test
    void contractPassesTheReferenceStoreThroughLauncher() {
        assertThat(failedTests(Reference.class)).isEmpty();
    }

    @Test
    void contractPassesAStoreWithoutTransactionalModeThroughLauncher() {
        assertThat(failedTests(WithoutTransactionalMode.class)).isEmpty();
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

    static class Reference extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.NONE);
        }
    }

    /** The reference store seen through {@link ReplyStore} alone, so its defaults answer for transactional mode. */
    static class WithoutTransactionalMode extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            Store store = new Store(ticker, Flaw.NONE);
            return new ReplyStore() {
                @Override
                public List<ClaimResult> claim(List<ClaimRequest> requests) {
                    return store.claim(requests);
                }

                @Override
                public boolean complete(StoreKey key, long token, Duration retention) {
                    return store.complete(key, token, retention);
                }

                @Override
                public boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply) {
                    return store.completeWithReply(key, token, retention, reply);
                }

                @Override
                public Optional<StoredReply> reply(StoreKey key) {
                    return store.reply(key);
                }

                @Override
                public boolean release(StoreKey key, long token) {
                    return store.release(key, token);
                }

                @Override
                public boolean renew(StoreKey key, long token, Duration lease) {
                    return store.renew(key, token, lease);
                }

                @Override
                public void close() {
                    store.close();
                }
            };
        }
    }

    static class IgnoresTokens extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.IGNORES_TOKENS);
        }
    }

    static class ReplyAfterCompletion extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.REPLY_AFTER_COMPLETION);
        }
    }

    static class ReplyByKeyOnly extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.REPLY_BY_KEY_ONLY);
        }
    }

    static class NoSizeCheck extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.NO_SIZE_CHECK);
        }
    }

    static class DropsBatchReplies extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.DROPS_BATCH_REPLIES);
        }
    }

    static class DropsTransactionalReplies extends ReplyStoreContract {
        @Override
        protected ReplyStore createStore(ManualTicker ticker) {
            return new Store(ticker, Flaw.DROPS_TRANSACTIONAL_REPLIES);
        }
    }

    /**
     * One lock, one map of keys, one of replies, each reply with the token of the completion it came with; the flaw,
     * if any, where it says. Its transactional runs hold the lock while their work runs, which is the simplest way to
     * serialize them, and write the key and the reply the work recorded only once the work returned.
     */
    static final class Store implements ReplyStore, TransactionalDedupStore {
        private record Key(long token, int attempts, boolean completed, long leaseUntil, long retention,
                long forgetAt) {
        }

        private record Kept(long token, StoredReply reply) {
        }

        /** A run's transaction: its key and token, and the reply its work recorded. */
        private static final class Run implements StoreTransaction {
            final StoreKey key;
            StoredReply reply;
            boolean ended;

            Run(StoreKey key) {
                this.key = key;
            }

            @Override
            public <T> T unwrap(Class<T> type) {
                return null;
            }
        }

        private final LongSupplier ticker;
        private final Flaw flaw;
        private final Map<StoreKey, Key> keys = new HashMap<>();
        private final Map<StoreKey, Kept> replies = new HashMap<>();
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
        public boolean complete(StoreKey key, long token, Duration retention) {
            return completeWith(key, token, retention, null);
        }

        @Override
        public boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply) {
            if (flaw != Flaw.NO_SIZE_CHECK) {
                ReplyStore.check(reply);
            }
            return completeWith(key, token, retention, reply);
        }

        private boolean completeWith(StoreKey key, long token, Duration retention, StoredReply reply) {
            synchronized (this) {
                long now = ticker.getAsLong();
                Key k = live(key, now);
                if (k != null && k.completed() && k.token() == token) {
                    return true;
                }
                if (owned(key, token) == null) {
                    return false;
                }
                keys.put(key, new Key(token, k.attempts(), true, now, 0, now + retention.toNanos()));
                if (reply == null || retention.isZero()) {
                    return true;
                }
                if (flaw != Flaw.REPLY_AFTER_COMPLETION) {
                    replies.put(key, new Kept(token, reply));
                    return true;
                }
            }
            // The window a store that writes the reply after the completion leaves: a duplicate's read lands in it.
            LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
            synchronized (this) {
                replies.put(key, new Kept(token, reply));
                return true;
            }
        }

        @Override
        public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
            List<CompletionResult> results = new ArrayList<>();
            for (CompletionRequest r : requests) {
                boolean done = r.reply() == null || flaw == Flaw.DROPS_BATCH_REPLIES
                        ? complete(r.key(), r.token(), r.retention())
                        : completeWithReply(r.key(), r.token(), r.retention(), r.reply());
                results.add(done ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER);
            }
            return results;
        }

        @Override
        public synchronized Optional<StoredReply> reply(StoreKey key) {
            Key k = live(key, ticker.getAsLong());
            Kept kept = replies.get(key);
            if (k == null || !k.completed() || kept == null) {
                return Optional.empty();
            }
            return kept.token() == k.token() || flaw == Flaw.REPLY_BY_KEY_ONLY ? Optional.of(kept.reply())
                    : Optional.empty();
        }

        @Override
        public synchronized boolean release(StoreKey key, long token) {
            if (owned(key, token) == null) {
                return false;
            }
            keys.remove(key);
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

        /** Holds the lock through the work; a work that throws leaves nothing behind. */
        @Override
        public synchronized Outcome runOnce(StoreKey key, String fingerprint, Duration retention, Work work)
                throws Exception {
            long now = ticker.getAsLong();
            Key k = live(key, now);
            if (k != null && k.completed()) {
                return Outcome.DUPLICATE;
            }
            Run run = new Run(key);
            try {
                work.run(run);
            } finally {
                run.ended = true;
            }
            long token = tokens.incrementAndGet();
            keys.put(key, new Key(token, k == null ? 1 : k.attempts() + 1, true, now, 0, now + retention.toNanos()));
            if (run.reply != null && !retention.isZero() && flaw != Flaw.DROPS_TRANSACTIONAL_REPLIES) {
                replies.put(key, new Kept(token, run.reply));
            }
            return Outcome.COMMITTED;
        }

        @Override
        public synchronized void recordReply(StoreTransaction transaction, StoreKey key, StoredReply reply) {
            if (!(transaction instanceof Run run)) {
                throw new IllegalArgumentException("not a transaction of this store: " + transaction);
            }
            if (run.ended) {
                throw new IllegalStateException("the run's transaction has ended");
            }
            if (!run.key.equals(key)) {
                throw new IllegalArgumentException("the transaction does not complete " + key);
            }
            ReplyStore.check(reply);
            if (flaw == Flaw.REPLY_BY_KEY_ONLY) {
                // Written at once, outside the run: a run that throws afterwards leaves it behind.
                replies.put(key, new Kept(0, reply));
            } else {
                run.reply = reply;
            }
        }

        @Override
        public synchronized void close() {
            keys.clear();
            replies.clear();
        }
    }
}
