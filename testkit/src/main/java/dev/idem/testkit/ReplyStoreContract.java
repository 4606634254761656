package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredReply;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.BatchMember;
import dev.idem.spi.TransactionalDedupStore.GroupMember;
import dev.idem.spi.TransactionalDedupStore.GroupResult;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import dev.idem.spi.TransactionalDedupStore.Savepoints;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The contract of a {@link ReplyStore}: the reply stored with a key's completion, for request/reply pipelines whose
 * duplicates get the stored reply sent again (docs/design.md, "Request/reply and the stored reply"), as JUnit 5
 * tests. It runs beside {@link DedupStoreContract}, not instead of it: a second test class of the store extends this
 * one and says how to make the store:
 *
 * <pre>{@code
 * class CaffeineReplyStoreTest extends ReplyStoreContract {
 *     private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();
 *
 *     @Override
 *     protected ReplyStore createStore(ManualTicker ticker) {
 *         return (ReplyStore) provider.create(
 *                 TestPluginConfig.defaults("store.caffeine", provider.configSpec()), new StoreContext(ticker));
 *     }
 * }
 * }</pre>
 *
 * <h2>What it checks</h2>
 * <b>Content:</b> a reply is read back exactly as stored, every payload byte, an empty payload, headers of any text
 * (names differing only in case, Unicode, quotes, separators, NUL, empty values), and one of the largest weight,
 * {@value ReplyStore#MAX_REPLY_BYTES} bytes, whether the payload or the headers carry it; a reply one byte heavier is
 * refused before anything is written. Replies of two keys and two namespaces are independent. <b>With the
 * completion:</b> a key completed without a reply, a key not completed (absent, claimed, released) answer empty; a
 * duplicate's claim sees the key completed; whoever sees the completion sees its reply, even racing it; a batch
 * ({@code completeAll}) stores each request's reply and none for a request without one. <b>Fencing:</b> another
 * token, a stale owner whose key was taken over and a released claim's former owner store nothing; an owner whose
 * lease ran out while nobody took the key over still completes with its reply; a completion retried by its owner
 * answers {@code true} and keeps the first reply. <b>Lifetime:</b> a reply is kept for its completion's retention, is
 * forgotten with it, and never shows in the key's next life; a retention of zero stores none; an operator's
 * {@code delete} or {@code purge} forgets it (for an {@link InspectableDedupStore}). <b>Transactional mode</b> (for a
 * {@link TransactionalDedupStore}): a reply recorded in a run's transaction commits with the run, rolls back with a
 * run that throws (a later run committing without a reply shows none), the last of two records wins, a group member's
 * reply follows its own savepoint under both {@link Savepoints}, a batch run's replies commit and roll back with it
 * (for a store that {@linkplain TransactionalDedupStore#runsBatches() runs batches}), and a record outside the work,
 * or for a key the transaction does not complete, is refused; a store without transactional mode refuses
 * {@code recordReply}.
 *
 * <h2>Time and isolation</h2>
 * As for {@link DedupStoreContract}: no test sleeps; {@link #advance(Duration)} calls
 * {@link #advanceStoreClock(Duration)}, which a store on a server clock overrides to move its stored deadlines (the
 * replies' as well as the keys') back, and such a store overrides {@link #clockResolution()} too. Each test gets a
 * new store and a namespace of its own ({@link #namespace()}).
 */
public abstract class ReplyStoreContract {

    /** The lease every claim of the suite asks for. */
    protected static final Duration LEASE = Duration.ofSeconds(30);

    /** How long a claim is remembered after its lease. */
    protected static final Duration CLAIM_RETENTION = Duration.ofMinutes(5);

    /** How long a completed key, and its reply, is remembered. */
    protected static final Duration RETENTION = Duration.ofHours(1);

    private static final int RACES = 40;

    private ManualTicker ticker;
    private ReplyStore store;
    private String namespace;

    /**
     * Makes the store under test; called before each test, with the ticker rules of
     * {@link DedupStoreContract#createStore}.
     */
    protected abstract ReplyStore createStore(ManualTicker ticker);

    /**
     * Makes {@code duration} pass on the store's clock; default: advances the ticker. A store on a server clock moves
     * every stored deadline of this test's namespace back instead, its replies' included.
     */
    protected void advanceStoreClock(Duration duration) {
        ticker.advance(duration);
    }

    /** The smallest step of time the store tells apart; see {@link DedupStoreContract#clockResolution()}. */
    protected Duration clockResolution() {
        return Duration.ofNanos(1);
    }

    /** Makes {@code duration} pass for the store, through {@link #advanceStoreClock(Duration)}. */
    protected final void advance(Duration duration) {
        advanceStoreClock(duration);
    }

    protected final ReplyStore store() {
        return store;
    }

    protected final ManualTicker ticker() {
        return ticker;
    }

    /** This test's namespace; every key of the suite has a namespace starting with it. */
    protected final String namespace() {
        return namespace;
    }

    protected final StoreKey key(String id) {
        return new StoreKey(namespace, id);
    }

    @BeforeEach
    protected final void createStoreForTest(TestInfo test) {
        String method = test.getTestMethod().map(m -> m.getName()).orElse("test");
        if (method.length() > 40) {
            method = method.substring(0, 40);
        }
        namespace = "replies-" + method + "-" + UUID.randomUUID().toString().substring(0, 8);
        ticker = new ManualTicker();
        store = createStore(ticker);
        assertThat(store).as("createStore(ticker)").isNotNull();
    }

    @AfterEach
    protected final void closeStore() {
        if (store != null) {
            store.close();
            store = null;
        }
    }

    // ---------------------------------------------------------------- what is kept

    @Test
    void replyStoredWithTheCompletionIsReadBackByteForByte() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        byte[] everyByte = new byte[512];
        for (int i = 0; i < everyByte.length; i++) {
            everyByte[i] = (byte) i;
        }
        StoredReply sent = new StoredReply(everyByte, Map.of("correlation-id", "c-1", "content-type",
                "application/octet-stream"));

        assertThat(store.completeWithReply(key, owner.token(), RETENTION, sent)).isTrue();

        assertThat(claim(key)).as("a duplicate's claim").isEqualTo(new Duplicate(true));
        StoredReply read = replyOf(key);
        assertThat(read.payload()).isEqualTo(everyByte);
        assertThat(read.headers()).isEqualTo(sent.headers());
        assertThat(read).isEqualTo(sent);
    }

    @Test
    void emptyPayloadAndNoHeadersAreKept() {
        StoreKey bare = key("bare");
        StoreKey headersOnly = key("headers-only");
        Acquired bareOwner = acquire(bare);
        Acquired headersOwner = acquire(headersOnly);

        assertThat(store.completeWithReply(bare, bareOwner.token(), RETENTION, new StoredReply(new byte[0]))).isTrue();
        assertThat(store.completeWithReply(headersOnly, headersOwner.token(), RETENTION,
                new StoredReply(new byte[0], Map.of("status", "accepted")))).isTrue();

        assertThat(replyOf(bare).payload()).isEmpty();
        assertThat(replyOf(bare).headers()).isEmpty();
        assertThat(replyOf(headersOnly).payload()).isEmpty();
        assertThat(replyOf(headersOnly).headers()).isEqualTo(Map.of("status", "accepted"));
    }

    @Test
    void headersOfAnyTextAreKeptExactly() {
        StoreKey key = key("order-\u00e9\u4e2d\ud83d\ude00 \"'\\:{}|\n");
        Acquired owner = acquire(key);
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("content-type", "application/json; charset=utf-8");
        headers.put("Content-Type", "differs only in case");
        headers.put("content-type ", "a trailing space in the name");
        headers.put("\u00e9t\u00e9", "\u4e2d\u6587 \ud83d\ude00 \u0645\u0631\u062d\u0628\u0627");
        headers.put("quote\"back\\slash", "a|b:c{d}=e;f,g\n\r\t\u0000h\u007f\u0080\u00ff");
        headers.put("json", "{\"k\":\"v\",\"n\":[1,2]}");
        headers.put("empty", "");
        headers.put("spaces", "  leading and trailing  ");
        headers.put("long", "\u00e9".repeat(5000) + "x".repeat(5000));
        headers.put("correlation_id", UUID.randomUUID().toString());
        StoredReply sent = new StoredReply(utf8("{\"ok\":true}"), headers);

        assertThat(store.completeWithReply(key, owner.token(), RETENTION, sent)).isTrue();

        Map<String, String> read = replyOf(key).headers();
        assertThat(read).hasSize(headers.size());
        headers.forEach((name, value) -> assertThat(read.get(name)).as("header '%s'", name).isEqualTo(value));
        assertThat(replyOf(key).payload()).isEqualTo(utf8("{\"ok\":true}"));
    }

    @Test
    void replyOfTheLargestWeightIsKeptWhetherPayloadOrHeadersCarryIt() {
        StoreKey inPayload = key("in-payload");
        StoreKey inHeaders = key("in-headers");
        Acquired payloadOwner = acquire(inPayload);
        Acquired headersOwner = acquire(inHeaders);
        Map<String, String> headers = Map.of("correlation-id", "c-1", "h\u00e9", "\u4e2d".repeat(100));
        byte[] large = new byte[ReplyStore.MAX_REPLY_BYTES - headerBytes(headers)];
        for (int i = 0; i < large.length; i++) {
            large[i] = (byte) (i * 31 + 7);
        }
        StoredReply heaviestPayload = new StoredReply(large, headers);
        StoredReply heaviestHeaders = new StoredReply(new byte[0], Map.of("big", "y".repeat(ReplyStore.MAX_REPLY_BYTES
                - 3 - 8 * 3 - 1) + "\u4e2d".repeat(8)));
        assertThat(heaviestPayload.size()).isEqualTo(ReplyStore.MAX_REPLY_BYTES);
        assertThat(heaviestHeaders.size()).isEqualTo(ReplyStore.MAX_REPLY_BYTES - 1);

        assertThat(store.completeWithReply(inPayload, payloadOwner.token(), RETENTION, heaviestPayload)).isTrue();
        assertThat(store.completeWithReply(inHeaders, headersOwner.token(), RETENTION, heaviestHeaders)).isTrue();

        assertThat(replyOf(inPayload).payload()).isEqualTo(large);
        assertThat(replyOf(inPayload)).isEqualTo(heaviestPayload);
        assertThat(replyOf(inHeaders)).isEqualTo(heaviestHeaders);
    }

    @Test
    void replyOneByteHeavierIsRefusedBeforeAnythingIsWritten() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        Map<String, String> headers = Map.of("correlation-id", "c-\u00e9");
        StoredReply tooHeavy = new StoredReply(new byte[ReplyStore.MAX_REPLY_BYTES - headerBytes(headers) + 1],
                headers);
        StoredReply tooHeavyHeaders = new StoredReply(new byte[0], Map.of("big", "y".repeat(ReplyStore.MAX_REPLY_BYTES
                - 2)));
        assertThat(tooHeavy.size()).isEqualTo(ReplyStore.MAX_REPLY_BYTES + 1);

        assertThatThrownBy(() -> store.completeWithReply(key, owner.token(), RETENTION, tooHeavy))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.completeWithReply(key, owner.token(), RETENTION, tooHeavyHeaders))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new CompletionRequest(key, owner.token(), RETENTION, null, tooHeavy))
                .as("a batch's request").isInstanceOf(IllegalArgumentException.class);

        assertThat(claim(key)).as("still claimed: nothing was written").isInstanceOf(InProgress.class);
        assertThat(store.reply(key)).isEmpty();
        assertThat(store.complete(key, owner.token(), RETENTION)).as("its owner completes it still").isTrue();
        assertThat(store.reply(key)).isEmpty();
    }

    @Test
    void repliesOfTwoKeysAndTwoNamespacesAreIndependent() {
        StoreKey a = key("order-a");
        StoreKey b = key("order-b");
        StoreKey elsewhere = new StoreKey(namespace + "-other", "order-a");
        Acquired ownerA = acquire(a);
        Acquired ownerB = acquire(b);
        Acquired ownerElsewhere = acquire(elsewhere);

        assertThat(store.completeWithReply(a, ownerA.token(), RETENTION, reply("a"))).isTrue();
        assertThat(store.completeWithReply(elsewhere, ownerElsewhere.token(), RETENTION, reply("elsewhere")))
                .isTrue();
        assertThat(store.complete(b, ownerB.token(), RETENTION)).isTrue();

        assertThat(replyOf(a)).isEqualTo(reply("a"));
        assertThat(store.reply(b)).isEmpty();
        assertThat(replyOf(elsewhere)).isEqualTo(reply("elsewhere"));
    }

    // ---------------------------------------------------------------- with the completion

    @Test
    void keyCompletedWithoutAReplyAnswersEmpty() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(store.reply(key)).isEmpty();
    }

    @Test
    void keyNotCompletedAnswersEmpty() {
        StoreKey absent = key("never-claimed");
        StoreKey claimed = key("claimed");
        StoreKey released = key("released");
        acquire(claimed);
        Acquired releasedOwner = acquire(released);
        assertThat(store.release(released, releasedOwner.token())).isTrue();

        assertThat(store.reply(absent)).isEmpty();
        assertThat(store.reply(claimed)).isEmpty();
        assertThat(store.reply(released)).isEmpty();
    }

    @Test
    void completeAllStoresEachRequestsReplyWithItsCompletion() {
        StoreKey withReply = key("with-reply");
        StoreKey without = key("without");
        StoreKey advanceless = key("four-arguments");
        StoreKey stale = key("stale");
        Acquired withOwner = acquire(withReply);
        Acquired withoutOwner = acquire(without);
        Acquired advancelessOwner = acquire(advanceless);
        Acquired staleOwner = acquire(stale);

        List<CompletionResult> results = store.completeAll(List.of(
                new CompletionRequest(withReply, withOwner.token(), RETENTION, null, reply("first")),
                new CompletionRequest(without, withoutOwner.token(), RETENTION),
                new CompletionRequest(advanceless, advancelessOwner.token(), RETENTION, null),
                new CompletionRequest(stale, staleOwner.token() + 1, RETENTION, null, reply("stale"))));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, CompletionResult.COMPLETED,
                CompletionResult.COMPLETED, CompletionResult.NOT_OWNER);
        assertThat(replyOf(withReply)).isEqualTo(reply("first"));
        assertThat(store.reply(without)).isEmpty();
        assertThat(store.reply(advanceless)).isEmpty();
        assertThat(store.reply(stale)).isEmpty();
        assertThat(claim(stale)).as("left to its owner").isInstanceOf(InProgress.class);
        assertThat(store.complete(stale, staleOwner.token(), RETENTION)).isTrue();
        assertThat(store.reply(stale)).isEmpty();
    }

    @Test
    void completeAllOfManyKeysKeepsEveryReply() {
        List<CompletionRequest> requests = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            StoreKey key = key("order-" + i);
            Acquired owner = acquire(key);
            requests.add(new CompletionRequest(key, owner.token(), RETENTION, null,
                    i % 3 == 2 ? null : new StoredReply(utf8("reply " + i), Map.of("n", Integer.toString(i)))));
        }

        List<CompletionResult> results = store.completeAll(requests);

        for (int i = 0; i < requests.size(); i++) {
            CompletionRequest request = requests.get(i);
            assertThat(results.get(i)).as("%s", request.key().id()).isEqualTo(CompletionResult.COMPLETED);
            assertThat(store.reply(request.key())).as("%s", request.key().id())
                    .isEqualTo(Optional.ofNullable(request.reply()));
        }
    }

    /**
     * For each key, one thread completes it with a reply (alone or in a batch of one) while another claims it until
     * it is a duplicate and then reads its reply at once. A store that writes the completion and the reply in two
     * steps lets the reader in between: a duplicate without its reply, which the runtime would answer with nothing.
     */
    @Test
    @Timeout(120)
    void whoeverSeesTheCompletionSeesItsReply() throws Exception {
        List<StoreKey> keys = new ArrayList<>();
        List<Acquired> owners = new ArrayList<>();
        for (int i = 0; i < RACES; i++) {
            StoreKey key = key("race-" + i);
            keys.add(key);
            owners.add(acquire(key));
        }
        ExecutorService threads = Executors.newFixedThreadPool(2 * RACES);
        try {
            CyclicBarrier start = new CyclicBarrier(2 * RACES);
            List<Future<Boolean>> completions = new ArrayList<>();
            List<Future<Optional<StoredReply>>> readers = new ArrayList<>();
            for (int i = 0; i < RACES; i++) {
                StoreKey key = keys.get(i);
                long token = owners.get(i).token();
                StoredReply sent = reply("reply of " + i);
                boolean batched = i % 2 == 1;
                completions.add(threads.submit(() -> {
                    start.await();
                    return batched
                            ? store.completeAll(List.of(new CompletionRequest(key, token, RETENTION, null, sent)))
                                    .get(0).equals(CompletionResult.COMPLETED)
                            : store.completeWithReply(key, token, RETENTION, sent);
                }));
                readers.add(threads.submit(() -> {
                    start.await();
                    while (true) {
                        ClaimResult claimed = claim(key);
                        if (claimed instanceof Duplicate) {
                            return store.reply(key);
                        }
                        assertThat(claimed).as("the claim of %s while its owner completes it", key.id())
                                .isInstanceOf(InProgress.class);
                    }
                }));
            }
            for (int i = 0; i < RACES; i++) {
                assertThat(completions.get(i).get(60, TimeUnit.SECONDS)).isTrue();
                assertThat(readers.get(i).get(60, TimeUnit.SECONDS))
                        .as("%s: the reply read right after its claim saw it completed", keys.get(i).id())
                        .contains(reply("reply of " + i));
            }
        } finally {
            threads.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- fencing

    @Test
    void anotherTokenStoresNoReplyAndCompletesNothing() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(store.completeWithReply(key, owner.token() + 1, RETENTION, reply("theirs"))).isFalse();
        assertThat(store.completeWithReply(key, owner.token() - 1, RETENTION, reply("theirs"))).isFalse();

        assertThat(claim(key)).as("still its owner's").isInstanceOf(InProgress.class);
        assertThat(store.reply(key)).isEmpty();
        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("mine"))).isTrue();
        assertThat(replyOf(key)).isEqualTo(reply("mine"));
    }

    @Test
    void ownerWhoseKeyWasTakenOverStoresNoReply() {
        StoreKey key = key("order-1");
        Acquired stale = acquire(key);
        advance(LEASE.plus(clockResolution()));
        Acquired owner = acquire(key);
        assertThat(owner.attempt()).as("a takeover").isEqualTo(2);

        assertThat(store.completeWithReply(key, stale.token(), RETENTION, reply("stale owner's"))).isFalse();
        assertThat(store.reply(key)).isEmpty();
        assertThat(claim(key)).as("still the new owner's").isInstanceOf(InProgress.class);

        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("new owner's"))).isTrue();
        assertThat(replyOf(key)).isEqualTo(reply("new owner's"));
        assertThat(store.completeWithReply(key, stale.token(), RETENTION, reply("stale owner's"))).isFalse();
        assertThat(replyOf(key)).isEqualTo(reply("new owner's"));
    }

    @Test
    void ownerWhoseLeaseRanOutStillCompletesWithItsReplyWhileNobodyTookTheKeyOver() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        advance(LEASE.plus(clockResolution()));

        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("late"))).isTrue();

        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(replyOf(key)).isEqualTo(reply("late"));
    }

    @Test
    void releasedClaimsFormerOwnerStoresNoReply() {
        StoreKey key = key("order-1");
        Acquired released = acquire(key);
        assertThat(store.release(key, released.token())).isTrue();

        assertThat(store.completeWithReply(key, released.token(), RETENTION, reply("late"))).isFalse();

        assertThat(store.reply(key)).isEmpty();
        assertThat(acquire(key).attempt()).isEqualTo(1);
    }

    @Test
    void completionRetriedByItsOwnerAnswersTrueAndKeepsTheFirstReply() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("first"))).isTrue();

        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("second"))).isTrue();
        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();
        assertThat(store.completeAll(List.of(new CompletionRequest(key, owner.token(), RETENTION, null,
                reply("third"))))).containsExactly(CompletionResult.COMPLETED);

        assertThat(replyOf(key)).isEqualTo(reply("first"));
    }

    // ---------------------------------------------------------------- lifetime

    @Test
    void replyIsKeptForItsCompletionsRetention() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("r"))).isTrue();

        advance(RETENTION.minus(clockResolution().multipliedBy(2)));

        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(replyOf(key)).isEqualTo(reply("r"));
    }

    @Test
    void replyIsForgottenWithItsCompletionAndNeverSeenInTheKeysNextLife() {
        StoreKey key = key("order-1");
        StoreKey again = key("order-2");
        Acquired owner = acquire(key);
        Acquired againOwner = acquire(again);
        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("earlier life"))).isTrue();
        assertThat(store.completeWithReply(again, againOwner.token(), RETENTION, reply("earlier life"))).isTrue();
        advance(RETENTION.plus(clockResolution()));

        assertThat(store.reply(key)).as("forgotten with the completion").isEmpty();
        Acquired fresh = acquire(key);
        Acquired freshAgain = acquire(again);
        assertThat(fresh.attempt()).as("claimed afresh").isEqualTo(1);
        assertThat(store.reply(key)).isEmpty();
        assertThat(store.complete(key, fresh.token(), RETENTION)).isTrue();
        assertThat(store.completeWithReply(again, freshAgain.token(), RETENTION, reply("this life"))).isTrue();

        assertThat(store.reply(key)).as("completed without a reply in its next life").isEmpty();
        assertThat(replyOf(again)).isEqualTo(reply("this life"));
    }

    @Test
    void completionForgottenAtOnceKeepsNoReply() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(store.completeWithReply(key, owner.token(), Duration.ZERO, reply("r"))).isTrue();

        assertThat(store.reply(key)).isEmpty();
        Acquired fresh = acquire(key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(store.complete(key, fresh.token(), RETENTION)).isTrue();
        assertThat(store.reply(key)).isEmpty();
    }

    @Test
    void deleteForgetsTheKeysReply() {
        if (!(store instanceof InspectableDedupStore inspectable)) {
            return;
        }
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("r"))).isTrue();

        assertThat(inspectable.delete(key)).isTrue();

        assertThat(store.reply(key)).isEmpty();
        Acquired fresh = acquire(key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(store.complete(key, fresh.token(), RETENTION)).isTrue();
        assertThat(store.reply(key)).isEmpty();
    }

    @Test
    void purgeForgetsThePurgedKeysReply() {
        if (!(store instanceof InspectableDedupStore inspectable)) {
            return;
        }
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.completeWithReply(key, owner.token(), RETENTION, reply("r"))).isTrue();

        String cursor = null;
        long deleted = 0;
        do {
            var batch = inspectable.purge(namespace, Instant.now().plus(RETENTION).plus(Duration.ofMinutes(1)), cursor,
                    100);
            deleted += batch.deleted();
            cursor = batch.cursor();
        } while (cursor != null);

        assertThat(deleted).isEqualTo(1);
        assertThat(store.reply(key)).isEmpty();
        Acquired fresh = acquire(key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(store.complete(key, fresh.token(), RETENTION)).isTrue();
        assertThat(store.reply(key)).isEmpty();
    }

    // ---------------------------------------------------------------- transactional mode

    @Test
    void replyRecordedInARunThatCommitsIsStoredWithItsKey() throws Exception {
        if (!(store instanceof TransactionalDedupStore transactional)) {
            return;
        }
        StoreKey key = key("order-1");

        Outcome outcome = transactional.runOnce(key, null, RETENTION, tx -> store.recordReply(tx, key, reply("r")));

        assertThat(outcome).isEqualTo(Outcome.COMMITTED);
        assertThat(replyOf(key)).isEqualTo(reply("r"));
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(transactional.runOnce(key, null, RETENTION, tx -> store.recordReply(tx, key, reply("again"))))
                .isEqualTo(Outcome.DUPLICATE);
        assertThat(replyOf(key)).isEqualTo(reply("r"));
    }

    @Test
    void replyRecordedInAClaimedKeysRunIsStoredWithItsKey() throws Exception {
        if (!(store instanceof TransactionalDedupStore transactional)) {
            return;
        }
        StoreKey key = key("order-1");
        acquire(key);

        assertThat(transactional.runOnce(key, null, RETENTION, tx -> store.recordReply(tx, key, reply("r"))))
                .isEqualTo(Outcome.COMMITTED);

        assertThat(replyOf(key)).isEqualTo(reply("r"));
    }

    @Test
    void replyRecordedInARunThatThrowsIsRolledBackWithIt() throws Exception {
        if (!(store instanceof TransactionalDedupStore transactional)) {
            return;
        }
        StoreKey key = key("order-1");
        IllegalStateException failure = new IllegalStateException("the handler fails after replying");

        assertThatThrownBy(() -> transactional.runOnce(key, null, RETENTION, tx -> {
            store.recordReply(tx, key, reply("rolled back"));
            throw failure;
        })).isSameAs(failure);

        assertThat(store.reply(key)).isEmpty();
        assertThat(transactional.runOnce(key, null, RETENTION, tx -> { }))
                .as("the key was left absent: run again, without a reply").isEqualTo(Outcome.COMMITTED);
        assertThat(store.reply(key)).as("nothing of the rolled-back run").isEmpty();
    }

    @Test
    void replyRecordedTwiceInOneRunKeepsTheLast() throws Exception {
        if (!(store instanceof TransactionalDedupStore transactional)) {
            return;
        }
        StoreKey key = key("order-1");

        assertThat(transactional.runOnce(key, null, RETENTION, tx -> {
            store.recordReply(tx, key, reply("first"));
            store.recordReply(tx, key, reply("last"));
        })).isEqualTo(Outcome.COMMITTED);

        assertThat(replyOf(key)).isEqualTo(reply("last"));
    }

    @Test
    void replyTooHeavyOrForAnotherKeyOrAfterTheWorkIsRefusedInTransactionalMode() throws Exception {
        if (!(store instanceof TransactionalDedupStore transactional)) {
            return;
        }
        StoreKey key = key("order-1");
        StoredReply tooHeavy = new StoredReply(new byte[ReplyStore.MAX_REPLY_BYTES + 1]);
        AtomicReference<StoreTransaction> kept = new AtomicReference<>();

        assertThat(transactional.runOnce(key, null, RETENTION, tx -> {
            kept.set(tx);
            assertThatThrownBy(() -> store.recordReply(tx, key, tooHeavy))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.recordReply(tx, key("another"), reply("r")))
                    .as("a key the transaction does not complete").isInstanceOf(IllegalArgumentException.class);
        })).isEqualTo(Outcome.COMMITTED);

        assertThatThrownBy(() -> store.recordReply(kept.get(), key, reply("late")))
                .as("once the work returned").isInstanceOf(IllegalStateException.class);
        assertThat(store.reply(key)).isEmpty();
        assertThat(store.reply(key("another"))).isEmpty();
    }

    @Test
    void groupMembersRepliesFollowTheirOwnSavepoint() {
        if (!(store instanceof TransactionalDedupStore transactional)) {
            return;
        }
        for (Savepoints savepoints : Savepoints.values()) {
            String at = savepoints.name().toLowerCase();
            StoreKey replied = key(at + "-replied");
            StoreKey failed = key(at + "-failed");
            StoreKey silent = key(at + "-silent");
            StoreKey claimed = key(at + "-claimed-before");
            acquire(claimed);

            List<GroupResult> results = transactional.runGroup(List.of(
                    new GroupMember(replied, null, RETENTION, null, false,
                            tx -> store.recordReply(tx, replied, reply("replied"))),
                    new GroupMember(failed, null, RETENTION, null, false, tx -> {
                        store.recordReply(tx, failed, reply("failed"));
                        throw new IllegalStateException("rolled back to its savepoint");
                    }),
                    new GroupMember(silent, null, RETENTION, null, false, tx -> { }),
                    new GroupMember(claimed, null, RETENTION, null, false,
                            tx -> store.recordReply(tx, claimed, reply("claimed")))), savepoints);

            assertThat(results.get(0)).as(at).isEqualTo(new GroupResult.Done(Outcome.COMMITTED));
            assertThat(results.get(1)).as(at).isInstanceOf(GroupResult.Failed.class);
            assertThat(results.get(2)).as(at).isEqualTo(new GroupResult.Done(Outcome.COMMITTED));
            assertThat(results.get(3)).as(at).isEqualTo(new GroupResult.Done(Outcome.COMMITTED));
            assertThat(store.reply(replied)).as(at).contains(reply("replied"));
            assertThat(store.reply(failed)).as(at).isEmpty();
            assertThat(store.reply(silent)).as(at).isEmpty();
            assertThat(store.reply(claimed)).as("%s: a key claimed before its run", at).contains(reply("claimed"));
            assertThat(claim(failed)).as("%s: the failed member's key left absent", at).isInstanceOf(Acquired.class);
        }
    }

    @Test
    void repliesRecordedInABatchRunCommitWithItAndRollBackWithIt() throws Exception {
        if (!(store instanceof TransactionalDedupStore transactional) || !transactional.runsBatches()) {
            return;
        }
        StoreKey replied = key("replied");
        StoreKey silent = key("silent");
        StoreKey claimed = key("claimed-before");
        StoreKey duplicate = key("duplicate");
        acquire(claimed);
        assertThat(store.completeWithReply(duplicate, acquire(duplicate).token(), RETENTION, reply("first run")))
                .isTrue();

        List<Outcome> outcomes = transactional.runBatch(List.of(new BatchMember(replied, null, RETENTION),
                new BatchMember(silent, null, RETENTION), new BatchMember(claimed, null, RETENTION),
                new BatchMember(duplicate, null, RETENTION)), (tx, running) -> {
                    assertThat(running).containsExactly(0, 1, 2);
                    store.recordReply(tx, replied, reply("replied"));
                    store.recordReply(tx, claimed, reply("claimed"));
                    assertThatThrownBy(() -> store.recordReply(tx, duplicate, reply("again")))
                            .as("a duplicate's key, which the batch does not complete")
                            .isInstanceOf(IllegalArgumentException.class);
                });

        assertThat(outcomes).containsExactly(Outcome.COMMITTED, Outcome.COMMITTED, Outcome.COMMITTED,
                Outcome.DUPLICATE);
        assertThat(store.reply(replied)).contains(reply("replied"));
        assertThat(store.reply(silent)).isEmpty();
        assertThat(store.reply(claimed)).contains(reply("claimed"));
        assertThat(store.reply(duplicate)).contains(reply("first run"));

        StoreKey failed = key("failed");
        IllegalStateException failure = new IllegalStateException("the batch handler fails after replying");
        assertThatThrownBy(() -> transactional.runBatch(List.of(new BatchMember(failed, null, RETENTION)),
                (tx, running) -> {
                    store.recordReply(tx, failed, reply("rolled back"));
                    throw failure;
                })).isSameAs(failure);
        assertThat(store.reply(failed)).isEmpty();
        assertThat(claim(failed)).as("left absent").isInstanceOf(Acquired.class);
    }

    @Test
    void storeWithoutTransactionalModeRefusesToRecordAReply() {
        if (store instanceof TransactionalDedupStore) {
            return;
        }
        StoreTransaction none = new StoreTransaction() {
            @Override
            public <T> T unwrap(Class<T> type) {
                return null;
            }
        };

        assertThatThrownBy(() -> store.recordReply(none, key("order-1"), reply("r")))
                .isInstanceOf(UnsupportedOperationException.class);
    }

    // ---------------------------------------------------------------- helpers

    /** Claims {@code key}, which must be acquired. */
    protected final Acquired acquire(StoreKey key) {
        ClaimResult result = claim(key);
        assertThat(result).as("claim of %s", key.id()).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }

    protected final ClaimResult claim(StoreKey key) {
        return store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
    }

    /** The reply of {@code key}, which must have one. */
    protected final StoredReply replyOf(StoreKey key) {
        Optional<StoredReply> reply = store.reply(key);
        assertThat(reply).as("the reply of %s", key.id()).isPresent();
        return reply.get();
    }

    /** A small reply: {@code text} as its payload, and a correlation header made of it. */
    protected static StoredReply reply(String text) {
        return new StoredReply(utf8(text), Map.of("correlation-id", "c-" + text, "reply-to-\u00e9", "\u4e2d"));
    }

    protected static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static int headerBytes(Map<String, String> headers) {
        int bytes = 0;
        for (Map.Entry<String, String> header : headers.entrySet()) {
            bytes += utf8(header.getKey()).length + utf8(header.getValue()).length;
        }
        return bytes;
    }
}
