package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.idem.spi.OutboundMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.OutboxStore.Backlog;
import dev.idem.spi.OutboxStore.Emitted;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The contract every {@link OutboxStore} must pass: messages appended in a transaction of
 * {@link OutboxStore#runOnce} exist exactly when it commits, and relays, several at once and from several
 * stores as from several processes, publish each of them and delete it. A store's test extends it and says
 * how to open the store:
 *
 * <pre>{@code
 * class PostgresOutboxStoreTest extends OutboxStoreContract {
 *     @Override
 *     protected OutboxStore createStore() {
 *         table = database.newTable("idem_outbox");          // an empty outbox of this test's own
 *         return (OutboxStore) provider.create(config(table), StoreContext.system());
 *     }
 *
 *     @Override
 *     protected OutboxStore openAnotherStore() {
 *         return (OutboxStore) provider.create(config(table), StoreContext.system());   // as a second process would
 *     }
 * }
 * }</pre>
 *
 * <h2>What it checks</h2>
 * Every field of a message comes back as appended (headers holding quotes, newlines, NUL, non-ASCII and
 * supplementary characters, an empty name and value; payloads holding every byte value, or none; a null key
 * and message ID apart from empty ones), with the namespace, ids rising in append order and a creation time
 * between the append's start and end. Appends whose transaction rolls back leave nothing; a duplicate run
 * appends nothing; rows of a transaction still running are neither relayed nor counted. A committed row is
 * relayed once, and the outbox is then empty. A relay takes at most its limit, oldest first. A publisher that
 * fails on the third row ends the relay with its exception: the two rows before are gone, that row and the
 * rest are the next relay's. Relays in three threads, each on a store of its own, while two threads append
 * 2,000 rows: every row confirmed exactly once (also when publishers fail at random, the failed rows then
 * confirmed by a later relay) and each relay's rows in rising id order. A relay whose publisher stalls while
 * it holds rows does not hold up another relay, which takes the rows after them. {@code backlog} counts the
 * committed rows and dates the oldest.
 *
 * <h2>Isolation and life cycle</h2>
 * {@code relay} and {@code backlog} see the whole outbox, so each test needs a store whose outbox holds no
 * rows but its own: a table of its own on a shared server, or a new in-memory store. The stores a test opens
 * ({@link #createStore}, {@link #openAnotherStore}) are closed after it. No test sleeps: they wait on latches,
 * bounded by generous timeouts that only a hung store reaches.
 */
public abstract class OutboxStoreContract {

    /** How long the keys of the suite's transactions are remembered. */
    protected static final Duration RETENTION = Duration.ofHours(1);

    /** Rows the concurrency tests append and relay. */
    private static final int CONCURRENT_ROWS = 2_000;
    private static final int APPENDERS = 2;
    private static final int ROWS_PER_TRANSACTION = 20;
    private static final int RELAYS = 3;
    private static final int RELAY_LIMIT = 25;

    /** How long a test waits for a condition that holds at once unless the store is stuck. */
    private static final long WAIT_SECONDS = 60;

    private final List<OutboxStore> opened = new ArrayList<>();
    private final AtomicInteger transactions = new AtomicInteger();
    private OutboxStore store;
    private String namespace;

    /**
     * Opens the store under test, on an outbox that holds no rows (see "Isolation" above); called before each
     * test.
     */
    protected abstract OutboxStore createStore();

    /**
     * Opens another store on the same outbox as the one {@link #createStore} made for this test, with
     * connections of its own, as a second process would; the concurrency tests relay through several. Default:
     * {@code null}, for a store that cannot be opened twice on one outbox (an in-memory one): the tests then
     * share the store under test between their threads.
     */
    protected OutboxStore openAnotherStore() {
        return null;
    }

    /**
     * How far apart two readings of one instant through the store may be: its clock's resolution, the
     * difference between its clock and this host's, and the time a call takes. Default: one second.
     */
    protected Duration clockTolerance() {
        return Duration.ofSeconds(1);
    }

    /** The store under test. */
    protected final OutboxStore store() {
        return store;
    }

    /** This test's namespace; the suite's keys and messages use it and names derived from it. */
    protected final String namespace() {
        return namespace;
    }

    @BeforeEach
    protected final void createStoreForTest(TestInfo test) {
        String method = test.getTestMethod().map(m -> m.getName()).orElse("test");
        if (method.length() > 40) {
            method = method.substring(0, 40);
        }
        namespace = "outbox-" + method + "-" + UUID.randomUUID().toString().substring(0, 8);
        store = createStore();
        assertThat(store).as("createStore()").isNotNull();
        opened.add(store);
    }

    @AfterEach
    protected final void closeStores() {
        RuntimeException failure = null;
        for (OutboxStore each : opened) {
            try {
                each.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        opened.clear();
        if (failure != null) {
            throw failure;
        }
    }

    // ---------------------------------------------------------------- what is relayed

    @Test
    void appendedRowsAreRelayedInOrderWithEveryFieldIntact() throws Exception {
        Map<String, String> odd = new LinkedHashMap<>();
        odd.put("quote", "say \"hi\" and 'bye'");
        odd.put("lines", "one\ntwo\r\nthree\ttabbed");
        odd.put("backslash", "C:\\path\\u0041 \\");
        odd.put("unicode", "caf\u00e9 \u2713 \u65e5\u672c \uD83D\uDE00");
        odd.put("control", "nul\u0000soh\u0001del\u007f");
        odd.put("json", "{\"a\": [1, 2]}, =;:");
        odd.put("", "an empty name");
        odd.put("empty", "");
        odd.put("name with spaces, = and : \uD83D\uDE00", "v");
        byte[] everyByte = new byte[512];
        for (int i = 0; i < everyByte.length; i++) {
            everyByte[i] = (byte) i;
        }
        String otherNamespace = namespace + "-other";
        List<Emitted> first = List.of(
                emitted("orders.paid", new OutboundMessage("id-1", "order-1", odd, everyByte)),
                emitted("topic with spaces & \u00fcn\u00efc\u00f6de \uD83D\uDE00", new OutboundMessage("id-2", null, Map.of(),
                        new byte[0])));
        List<Emitted> second = List.of(
                emitted("q", new OutboundMessage(null, "", Map.of("a", "b"), new byte[] {0})));
        Instant before = Instant.now();

        appendCommitted(store, namespace, first);
        appendCommitted(store, otherNamespace, second);
        Instant after = Instant.now();

        List<OutboxRecord> relayed = new ArrayList<>();
        assertThat(store.relay(100, relayed::add)).isEqualTo(3);
        assertThat(relayed).hasSize(3);
        assertSameMessage(relayed.get(0), namespace, first.get(0));
        assertSameMessage(relayed.get(1), namespace, first.get(1));
        assertSameMessage(relayed.get(2), otherNamespace, second.get(0));
        assertThat(relayed.get(0).id()).as("ids rise in append order").isLessThan(relayed.get(1).id());
        assertThat(relayed.get(1).id()).as("ids rise in append order").isLessThan(relayed.get(2).id());
        assertThat(relayed).allSatisfy(r -> assertThat(r.createdAt())
                .as("created between the append's start and end")
                .isBetween(before.minus(clockTolerance()), after.plus(clockTolerance())));
    }

    @Test
    void appendOfNoMessagesWritesNothing() throws Exception {
        appendCommitted(store, namespace, List.of());

        assertThat(store.relay(10, record -> { throw new AssertionError("nothing to publish: " + record); })).isZero();
        assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);
    }

    // ---------------------------------------------------------------- transactions

    @Test
    void appendInATransactionThatRollsBackLeavesNothing() throws Exception {
        StoreKey key = new StoreKey(namespace, "order-1");
        IllegalStateException failure = new IllegalStateException("the handler failed after emitting");

        assertThatThrownBy(() -> store.runOnce(key, null, RETENTION, tx -> {
            store.append(tx, namespace, messages("rolled-back", 3));
            throw failure;
        })).isSameAs(failure);

        assertThat(store.relay(10, record -> { throw new AssertionError("rolled back, yet relayed: " + record); }))
                .isZero();
        assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);

        assertThat(store.runOnce(key, null, RETENTION, tx -> store.append(tx, namespace, messages("retried", 2))))
                .as("the key was left absent, so the retry runs").isEqualTo(Outcome.COMMITTED);
        assertThat(relayIds(store, 10)).containsExactly("retried-0", "retried-1");
    }

    @Test
    void committedRowsAreRelayedOnceThenTheOutboxIsEmpty() throws Exception {
        StoreKey key = new StoreKey(namespace, "order-1");
        assertThat(store.runOnce(key, null, RETENTION, tx -> store.append(tx, namespace, messages("m", 3))))
                .isEqualTo(Outcome.COMMITTED);
        AtomicInteger duplicateRuns = new AtomicInteger();
        assertThat(store.runOnce(key, null, RETENTION, tx -> {
            duplicateRuns.incrementAndGet();
            store.append(tx, namespace, messages("duplicate", 3));
        })).isEqualTo(Outcome.DUPLICATE);

        assertThat(relayIds(store, 10)).containsExactly("m-0", "m-1", "m-2");

        assertThat(duplicateRuns).as("the duplicate's work").hasValue(0);
        assertThat(relayIds(store, 10)).as("a second relay").isEmpty();
        assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void rowsOfATransactionStillRunningAreNeitherRelayedNorCounted() throws Exception {
        appendCommitted(store, namespace, messages("committed", 1));
        List<String> relayedInside = new ArrayList<>();
        List<Backlog> backlogInside = new ArrayList<>();

        assertThat(store.runOnce(new StoreKey(namespace, "running"), null, RETENTION, tx -> {
            store.append(tx, namespace, messages("running", 2));
            backlogInside.add(store.backlog());
            store.relay(10, record -> relayedInside.add(record.message().messageId()));
        })).isEqualTo(Outcome.COMMITTED);

        assertThat(backlogInside).singleElement().satisfies(b -> assertThat(b.rows()).isEqualTo(1));
        assertThat(relayedInside).containsExactly("committed-0");
        assertThat(relayIds(store, 10)).as("once committed").containsExactly("running-0", "running-1");
    }

    // ---------------------------------------------------------------- relay

    @Test
    void relayTakesAtMostItsLimitOldestFirst() throws Exception {
        appendCommitted(store, namespace, messages("m", 3));
        appendCommitted(store, namespace, messages("n", 2));

        assertThat(relayIds(store, 2)).containsExactly("m-0", "m-1");
        assertThat(relayIds(store, 2)).containsExactly("m-2", "n-0");
        assertThat(relayIds(store, 2)).containsExactly("n-1");
        assertThat(relayIds(store, 2)).isEmpty();
    }

    @Test
    void publisherFailingOnTheThirdRowEndsTheRelayAndLeavesThatRowAndTheRestForTheNext() throws Exception {
        appendCommitted(store, namespace, messages("m", 5));
        List<String> attempted = new ArrayList<>();
        RuntimeException notConfirmed = new IllegalStateException("the broker did not confirm");

        assertThatThrownBy(() -> store.relay(10, record -> {
            attempted.add(record.message().messageId());
            if (attempted.size() == 3) {
                throw notConfirmed;
            }
        })).isSameAs(notConfirmed);

        assertThat(attempted).containsExactly("m-0", "m-1", "m-2");
        assertThat(store.backlog().rows()).as("rows left").isEqualTo(3);
        assertThat(relayIds(store, 10)).containsExactly("m-2", "m-3", "m-4");
        assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void concurrentRelaysOnStoresOfTheirOwnPublishEveryRowExactlyOnce() throws Exception {
        relayConcurrently(false);
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void concurrentRelaysWhosePublishersFailAtRandomStillConfirmEveryRowExactlyOnce() throws Exception {
        relayConcurrently(true);
    }

    /**
     * {@value #APPENDERS} threads append {@value #CONCURRENT_ROWS} rows in transactions of
     * {@value #ROWS_PER_TRANSACTION}, while {@value #RELAYS} threads, each on a store of its own, relay up to
     * {@value #RELAY_LIMIT} rows at a time until the appenders are done and a relay finds nothing. A relay that
     * finds nothing while others hold the last rows may stop: the others go on until they find nothing too.
     */
    private void relayConcurrently(boolean failAtRandom) throws Exception {
        List<OutboxStore> relays = new ArrayList<>();
        for (int i = 0; i < RELAYS; i++) {
            relays.add(i == 0 ? store : anotherStore());
        }
        Map<String, Integer> confirmed = new ConcurrentHashMap<>();
        AtomicInteger failed = new AtomicInteger();
        Queue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicBoolean appended = new AtomicBoolean();
        CyclicBarrier start = new CyclicBarrier(APPENDERS + RELAYS);
        ExecutorService threads = Executors.newFixedThreadPool(APPENDERS + RELAYS);
        try {
            List<Future<?>> appenders = new ArrayList<>();
            int perAppender = CONCURRENT_ROWS / APPENDERS;
            for (int a = 0; a < APPENDERS; a++) {
                String prefix = "a" + a;
                appenders.add(threads.submit(() -> {
                    start.await();
                    for (int from = 0; from < perAppender; from += ROWS_PER_TRANSACTION) {
                        List<Emitted> batch = new ArrayList<>();
                        for (int i = from; i < Math.min(perAppender, from + ROWS_PER_TRANSACTION); i++) {
                            batch.add(message(prefix + "-" + i));
                        }
                        appendCommitted(store, namespace, batch);
                    }
                    return null;
                }));
            }
            List<Future<?>> relayers = new ArrayList<>();
            for (int r = 0; r < RELAYS; r++) {
                OutboxStore relay = relays.get(r);
                Random random = new Random(r);
                relayers.add(threads.submit(() -> {
                    start.await();
                    while (true) {
                        boolean done = appended.get();
                        List<Long> ids = new ArrayList<>();
                        int published;
                        boolean threw = false;
                        try {
                            published = relay.relay(RELAY_LIMIT, record -> {
                                if (failAtRandom && random.nextInt(20) == 0) {
                                    failed.incrementAndGet();
                                    throw new IllegalStateException("not confirmed");
                                }
                                ids.add(record.id());
                                confirmed.merge(record.message().messageId(), 1, Integer::sum);
                            });
                        } catch (IllegalStateException e) {
                            // The rows before the failed one were deleted; it and the rest are back in the outbox.
                            published = ids.size();
                            threw = true;
                        }
                        List<Long> sorted = new ArrayList<>(ids);
                        Collections.sort(sorted);
                        if (!sorted.equals(ids) || published != ids.size()) {
                            problems.add("a relay published ids " + ids + " and answered " + published);
                        }
                        if (done && published == 0 && !threw) {
                            return null;
                        }
                    }
                }));
            }
            for (Future<?> appender : appenders) {
                appender.get(4, TimeUnit.MINUTES);
            }
            appended.set(true);
            for (Future<?> relayer : relayers) {
                relayer.get(4, TimeUnit.MINUTES);
            }
        } finally {
            threads.shutdownNow();
        }

        assertThat(problems).isEmpty();
        if (failAtRandom) {
            assertThat(failed.get()).as("publishes failed").isPositive();
        }
        assertThat(confirmed).as("rows confirmed").hasSize(CONCURRENT_ROWS);
        assertThat(confirmed.entrySet()).filteredOn(e -> e.getValue() != 1).as("rows confirmed more than once")
                .isEmpty();
        assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void aRelayWhosePublisherStallsDoesNotHoldUpAnotherRelayWhichTakesTheRowsAfter() throws Exception {
        appendCommitted(store, namespace, messages("m", 10));
        OutboxStore other = anotherStore();
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        List<String> stalled = Collections.synchronizedList(new ArrayList<>());
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Integer> slow = threads.submit(() -> store.relay(4, record -> {
                stalled.add(record.message().messageId());
                holding.countDown();
                await(resume);
            }));
            await(holding);

            List<String> taken = new ArrayList<>();
            Future<Integer> fast = threads.submit(() -> other.relay(10, record -> taken.add(record.message().messageId())));

            assertThat(fast.get(WAIT_SECONDS, TimeUnit.SECONDS)).as("rows the other relay published").isEqualTo(6);
            assertThat(taken).containsExactly("m-4", "m-5", "m-6", "m-7", "m-8", "m-9");
            assertThat(slow).as("the stalled relay").isNotDone();
            assertThat(store.backlog().rows()).as("the stalled relay's rows").isEqualTo(4);

            resume.countDown();
            assertThat(slow.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(4);
            assertThat(stalled).containsExactly("m-0", "m-1", "m-2", "m-3");
            assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);
        } finally {
            resume.countDown();
            threads.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- backlog

    @Test
    void backlogCountsTheRowsAndDatesTheOldest() throws Exception {
        assertThat(store.backlog()).as("an empty outbox").isEqualTo(Backlog.EMPTY);
        Instant before = Instant.now();
        appendCommitted(store, namespace, messages("m", 3));
        appendCommitted(store, namespace, messages("n", 2));
        Instant after = Instant.now();

        Backlog all = store.backlog();
        List<OutboxRecord> first = new ArrayList<>();
        assertThat(store.relay(3, first::add)).isEqualTo(3);
        Backlog rest = store.backlog();
        List<OutboxRecord> second = new ArrayList<>();
        assertThat(store.relay(10, second::add)).isEqualTo(2);

        assertThat(all.rows()).isEqualTo(5);
        assertThat(all.oldest()).isBetween(before.minus(clockTolerance()), after.plus(clockTolerance()));
        assertThat(all.oldest()).as("the oldest row's creation")
                .isCloseTo(first.get(0).createdAt(), within(clockTolerance().toMillis(), ChronoUnit.MILLIS));
        assertThat(rest.rows()).isEqualTo(2);
        assertThat(rest.oldest()).as("the oldest row left's creation")
                .isCloseTo(second.get(0).createdAt(), within(clockTolerance().toMillis(), ChronoUnit.MILLIS));
        assertThat(store.backlog()).isEqualTo(Backlog.EMPTY);
    }

    // ---------------------------------------------------------------- helpers

    /** Another store on this test's outbox ({@link #openAnotherStore}), closed after the test; else the store under test. */
    protected final OutboxStore anotherStore() {
        OutboxStore other = openAnotherStore();
        if (other == null) {
            return store;
        }
        opened.add(other);
        return other;
    }

    /** Appends {@code messages} in a transaction of a fresh key of {@code namespace}, which commits. */
    protected final void appendCommitted(OutboxStore target, String namespace, List<Emitted> messages) throws Exception {
        StoreKey key = new StoreKey(namespace, "append-" + transactions.incrementAndGet());
        assertThat(target.runOnce(key, null, RETENTION, tx -> target.append(tx, namespace, messages)))
                .as("the appending transaction").isEqualTo(Outcome.COMMITTED);
    }

    /** Relays up to {@code limit} rows; returns the message IDs published, in order. */
    protected static List<String> relayIds(OutboxStore target, int limit) {
        List<String> ids = new ArrayList<>();
        int published = target.relay(limit, record -> ids.add(record.message().messageId()));
        assertThat(published).as("what relay answered").isEqualTo(ids.size());
        return ids;
    }

    /** {@code count} messages with IDs {@code prefix-0}, {@code prefix-1}, ... */
    protected static List<Emitted> messages(String prefix, int count) {
        List<Emitted> messages = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            messages.add(message(prefix + "-" + i));
        }
        return messages;
    }

    private static Emitted message(String id) {
        return emitted("events", new OutboundMessage(id, "key-" + id, Map.of("n", id), id.getBytes(StandardCharsets.UTF_8)));
    }

    private static Emitted emitted(String destination, OutboundMessage message) {
        return new Emitted(destination, message);
    }

    private static void assertSameMessage(OutboxRecord record, String namespace, Emitted expected) {
        OutboundMessage message = record.message();
        OutboundMessage sent = expected.message();
        assertThat(record.namespace()).as("namespace").isEqualTo(namespace);
        assertThat(record.destination()).as("destination").isEqualTo(expected.destination());
        assertThat(message.messageId()).as("message ID").isEqualTo(sent.messageId());
        assertThat(message.key()).as("key").isEqualTo(sent.key());
        assertThat(message.headers()).as("headers").isEqualTo(sent.headers());
        assertThat(message.payload()).as("payload").isEqualTo(sent.payload());
    }

    /** Waits for {@code latch}; usable in a publisher, which may throw no checked exception. */
    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new AssertionError("waited " + WAIT_SECONDS + "s for a latch that never opened");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting", e);
        }
    }
}
