package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * {@link StoredReply} as a value, the weight {@link CompletionRequest} checks, and the SPI's defaults for a batch with
 * replies: {@link DedupStore#completeAll} refuses one, {@link ReplyStore#completeAll} stores them one by one.
 */
class StoredReplyTest {

    private static final Duration RETENTION = Duration.ofHours(1);

    @Test
    void copiesItsPayloadInAndOutAndComparesByContent() {
        byte[] payload = "pong".getBytes(StandardCharsets.UTF_8);
        Map<String, String> headers = new HashMap<>(Map.of("correlation-id", "c-1"));
        StoredReply reply = new StoredReply(payload, headers);
        payload[0] = 'X';
        headers.put("later", "x");
        reply.payload()[1] = 'X';

        assertThat(reply.payload()).isEqualTo("pong".getBytes(StandardCharsets.UTF_8));
        assertThat(reply.headers()).containsOnlyKeys("correlation-id");
        assertThatThrownBy(() -> reply.headers().put("k", "v")).isInstanceOf(UnsupportedOperationException.class);
        assertThat(reply).isEqualTo(new StoredReply("pong".getBytes(StandardCharsets.UTF_8),
                Map.of("correlation-id", "c-1")));
        assertThat(reply.hashCode()).isEqualTo(new StoredReply("pong".getBytes(StandardCharsets.UTF_8),
                Map.of("correlation-id", "c-1")).hashCode());
        assertThat(reply).isNotEqualTo(new StoredReply("pong".getBytes(StandardCharsets.UTF_8)));
        assertThat(reply.toString()).doesNotContain("pong").doesNotContain("c-1");
    }

    @Test
    void refusesNulls() {
        assertThatThrownBy(() -> new StoredReply(null, Map.of())).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new StoredReply(new byte[0], null)).isInstanceOf(NullPointerException.class);
        Map<String, String> nullValue = new HashMap<>();
        nullValue.put("k", null);
        assertThatThrownBy(() -> new StoredReply(new byte[0], nullValue)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void weighsThePayloadAndTheHeadersInUtf8() {
        StoredReply reply = new StoredReply(new byte[10], Map.of("\u00e9", "\u4e2d\ud83d\ude00", "lone", "\ud800"));

        assertThat(reply.size()).isEqualTo(10 + 2 + 3 + 4 + 4 + 3);
    }

    @Test
    void requestRefusesAReplyHeavierThanEveryStoreHolds() {
        StoreKey key = new StoreKey("ns", "k");
        StoredReply heaviest = new StoredReply(new byte[ReplyStore.MAX_REPLY_BYTES - 2], Map.of("a", "b"));
        StoredReply heavier = new StoredReply(new byte[ReplyStore.MAX_REPLY_BYTES - 1], Map.of("a", "b"));

        assertThat(new CompletionRequest(key, 1, RETENTION, null, heaviest).reply()).isEqualTo(heaviest);
        assertThatThrownBy(() -> new CompletionRequest(key, 1, RETENTION, null, heavier))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1048577");
        assertThat(new CompletionRequest(key, 1, RETENTION).reply()).isNull();
        assertThat(new CompletionRequest(key, 1, RETENTION, null).reply()).isNull();
    }

    @Test
    void defaultCompleteAllOfAStoreThatIsNotAReplyStoreRefusesAReplyBeforeCompletingAnything() {
        Recording recording = new Recording();
        DedupStore store = new DedupStore() {
            @Override
            public List<ClaimResult> claim(List<ClaimRequest> requests) {
                return recording.claim(requests);
            }

            @Override
            public boolean complete(StoreKey key, long token, Duration retention) {
                return recording.complete(key, token, retention);
            }

            @Override
            public boolean release(StoreKey key, long token) {
                return recording.release(key, token);
            }

            @Override
            public boolean renew(StoreKey key, long token, Duration lease) {
                return recording.renew(key, token, lease);
            }

            @Override
            public void close() {
            }
        };

        assertThatThrownBy(() -> store.completeAll(List.of(
                new CompletionRequest(new StoreKey("ns", "first"), 1, RETENTION),
                new CompletionRequest(new StoreKey("ns", "replied"), 2, RETENTION, null, reply("r")))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a ReplyStore");
        assertThat(recording.calls).isEmpty();
    }

    @Test
    void defaultCompleteAllOfAReplyStoreStoresEachReplyWithItsCompletion() {
        Recording store = new Recording();
        SequenceAdvance advance = new SequenceAdvance(new StoreKey("ns", "aggregate"), 1, RETENTION);

        List<CompletionResult> results = store.completeAll(List.of(
                new CompletionRequest(new StoreKey("ns", "plain"), 1, RETENTION),
                new CompletionRequest(new StoreKey("ns", "replied"), 2, RETENTION, null, reply("r")),
                new CompletionRequest(new StoreKey("ns", "both"), 3, RETENTION, advance, reply("r"))));

        assertThat(results.get(0)).isEqualTo(CompletionResult.COMPLETED);
        assertThat(results.get(1)).isEqualTo(CompletionResult.COMPLETED);
        assertThat(results.get(2)).isInstanceOfSatisfying(CompletionResult.Failed.class,
                failed -> assertThat(failed.cause().retriable()).isFalse());
        assertThat(store.calls).containsExactly("complete plain/1", "completeWithReply replied/2 " + reply("r"));
    }

    private static StoredReply reply(String text) {
        return new StoredReply(text.getBytes(StandardCharsets.UTF_8), Map.of("correlation-id", text));
    }

    /** A store that records what it was asked and completes everything. */
    private static final class Recording implements ReplyStore {
        final List<String> calls = new ArrayList<>();

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            calls.add("complete " + key.id() + "/" + token);
            return true;
        }

        @Override
        public boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply) {
            calls.add("completeWithReply " + key.id() + "/" + token + " " + reply);
            return true;
        }

        @Override
        public Optional<StoredReply> reply(StoreKey key) {
            return Optional.empty();
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean release(StoreKey key, long token) {
            return false;
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            return false;
        }

        @Override
        public void close() {
        }
    }
}
