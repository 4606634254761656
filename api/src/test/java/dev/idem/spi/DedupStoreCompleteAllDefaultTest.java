package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The SPI's default {@code completeAll}, on a store that only implements {@code complete}. */
class DedupStoreCompleteAllDefaultTest {

    private static final Duration RETENTION = Duration.ofHours(1);

    @Test
    void completesKeyAfterKeyWithEachRequestsTokenAndRetentionAndAnswersInRequestOrder() {
        ScriptedStore store = new ScriptedStore(Map.of("owned-1", true, "stale", false, "owned-2", true));

        List<CompletionResult> results = store.completeAll(List.of(
                new CompletionRequest(key("owned-1"), 11, RETENTION),
                new CompletionRequest(key("stale"), 12, Duration.ofMinutes(5)),
                new CompletionRequest(key("owned-2"), 13, Duration.ZERO)));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, CompletionResult.NOT_OWNER,
                CompletionResult.COMPLETED);
        assertThat(store.calls).containsExactly("owned-1/11/PT1H", "stale/12/PT5M", "owned-2/13/PT0S");
    }

    @Test
    void emptyBatchCallsNothing() {
        ScriptedStore store = new ScriptedStore(Map.of());

        assertThat(store.completeAll(List.of())).isEmpty();
        assertThat(store.calls).isEmpty();
    }

    @Test
    void failureThatIsNotRetriableFailsItsKeyAloneAndTheRestAreStillCompleted() {
        StoreException refused = new StoreException("refused: not a record", false);
        ScriptedStore store = new ScriptedStore(Map.of("before", true, "after", true));
        store.failures.put("broken", refused);

        List<CompletionResult> results = store.completeAll(List.of(
                new CompletionRequest(key("before"), 1, RETENTION),
                new CompletionRequest(key("broken"), 2, RETENTION),
                new CompletionRequest(key("after"), 3, RETENTION)));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, new CompletionResult.Failed(refused),
                CompletionResult.COMPLETED);
        assertThat(store.calls).hasSize(3);
    }

    @Test
    void afterRetriableFailureTheRestAreNotTriedAndAreReportedFailedWithTheSameCause() {
        StoreException unreachable = new StoreException("cannot reach the store", true);
        ScriptedStore store = new ScriptedStore(Map.of("before", true, "after-1", true, "after-2", true));
        store.failures.put("down", unreachable);

        List<CompletionResult> results = store.completeAll(List.of(
                new CompletionRequest(key("before"), 1, RETENTION),
                new CompletionRequest(key("down"), 2, RETENTION),
                new CompletionRequest(key("after-1"), 3, RETENTION),
                new CompletionRequest(key("after-2"), 4, RETENTION)));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, new CompletionResult.Failed(unreachable),
                new CompletionResult.Failed(unreachable), new CompletionResult.Failed(unreachable));
        assertThat(results.subList(1, 4)).allSatisfy(r ->
                assertThat(((CompletionResult.Failed) r).cause()).isSameAs(unreachable));
        assertThat(store.calls).as("nothing is sent after the store became unreachable")
                .containsExactly("before/1/PT1H", "down/2/PT1H");
    }

    private static StoreKey key(String id) {
        return new StoreKey("orders", id);
    }

    /** Answers {@code complete} from a table, or throws the failure given for a key; records every call. */
    private static final class ScriptedStore implements DedupStore {
        private final Map<String, Boolean> answers;
        private final Map<String, StoreException> failures = new HashMap<>();
        private final List<String> calls = new ArrayList<>();

        ScriptedStore(Map<String, Boolean> answers) {
            this.answers = answers;
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            calls.add(key.id() + "/" + token + "/" + retention);
            StoreException failure = failures.get(key.id());
            if (failure != null) {
                throw failure;
            }
            return answers.get(key.id());
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean release(StoreKey key, long token) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
        }
    }
}
