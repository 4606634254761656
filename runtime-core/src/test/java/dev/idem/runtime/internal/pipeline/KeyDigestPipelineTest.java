package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code store.key-digest: sha256-128} end to end on the in-memory broker and the Caffeine store: the store is handed
 * digests of the keys and of the sequence guard's aggregate IDs, repeats are still recognised, and the handler sees
 * the message's real key.
 */
class KeyDigestPipelineTest {

    private static final String ID = "order-ü-" + "x".repeat(300);

    private final PipelineHarness harness = new PipelineHarness();
    private final List<String> handled = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        harness.close();
    }

    private static String config(String digest) {
        return PipelineHarness.pipeline("""
                sequence:
                  aggregate:
                    - type: header
                      name: account
                  number:
                    - type: header
                      name: event-seq
                """).replace("  type: caffeine\n", "  type: caffeine\n  key-digest: " + digest + "\n");
    }

    private void publish(String id, String account, long seq) {
        harness.broker.publish(QUEUE, new OutboundMessage(null, null,
                Map.of("message-id", id, "account", account, "event-seq", Long.toString(seq)),
                "payload".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void theStoreHoldsDigestsAndRepeatsAreStillDuplicates() {
        IdemRuntime runtime = harness.start(config("sha256-128"),
                (message, context) -> handled.add(message.idempotencyKey().orElseThrow()));
        publish(ID, "account-1", 1);
        publish(ID, "account-1", 1);
        publish("other", "account-2", 1);
        harness.awaitSettled();
        await().until(() -> count(runtime, "processed") == 2 && count(runtime, "duplicate") == 1);
        // A new message of an aggregate at or below its watermark: the guard read the digested aggregate's watermark.
        publish("late", "account-1", 1);
        harness.awaitSettled();
        await().until(() -> count(runtime, "stale") == 1);

        assertThat(handled).containsExactlyInAnyOrder(ID, "other");
        InspectableDedupStore store = (InspectableDedupStore) harness.store;
        String digest = KeyDigest.SHA256_128.apply(ID);
        assertThat(digest).hasSize(22);
        assertThat(store.inspect(new StoreKey("orders", digest))).get()
                .extracting(StoredKey::state).isEqualTo(StoredKey.State.COMPLETED);
        assertThat(store.inspect(new StoreKey("orders", ID))).isEmpty();
        SequencedDedupStore sequenced = (SequencedDedupStore) harness.store;
        assertThat(sequenced.watermark(new StoreKey("orders", KeyDigest.SHA256_128.apply("account-1")))).isEqualTo(1);
        assertThat(sequenced.watermark(new StoreKey("orders", "account-1"))).isZero();
    }

    @Test
    void withoutTheSettingTheStoreHoldsTheKeysAsTheyAre() {
        IdemRuntime runtime = harness.start(config("none"),
                (message, context) -> handled.add(message.idempotencyKey().orElseThrow()));
        publish(ID, "account-1", 1);
        harness.awaitSettled();
        await().until(() -> count(runtime, "processed") == 1);

        InspectableDedupStore store = (InspectableDedupStore) harness.store;
        assertThat(store.inspect(new StoreKey("orders", ID))).isPresent();
        assertThat(((SequencedDedupStore) harness.store).watermark(new StoreKey("orders", "account-1"))).isEqualTo(1);
    }
}
