package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.InspectableDedupStoreContract;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The contract kit plus what is particular to the JDBC store (the table's shape, exact keys, purging),
 * run against one database per subclass. The database's clock cannot be moved, so
 * {@link #advanceStoreClock} moves the stored deadlines back instead. Each test has a table of its own,
 * since {@code stats} counts a whole table.
 * Transactional mode has its own suite, {@link AbstractTransactionalModeTest}.
 */
abstract class AbstractJdbcDedupStoreTest extends InspectableDedupStoreContract {

    static final JdbcDedupStoreProvider PROVIDER = new JdbcDedupStoreProvider();

    private JdbcDedupStore created;
    private String table;

    /** The database of the subclass, found in its {@code @BeforeAll}. */
    abstract TestDatabase database();

    @Override
    protected InspectableDedupStore createInspectableStore(ManualTicker ticker) {
        table = database().newTable("idem_test");
        created = create(config());
        return created;
    }

    /** This test's table, which the store under test created. */
    String table() {
        return table;
    }

    /** The store's configuration for this test's table. */
    TestPluginConfig config() {
        return database().config(table);
    }

    static JdbcDedupStore create(TestPluginConfig config) {
        return (JdbcDedupStore) PROVIDER.create(config, StoreContext.system());
    }

    /** Moves every stored deadline of this test's table back by {@code duration}. */
    @Override
    protected void advanceStoreClock(Duration duration) {
        shiftClock(database(), table, duration);
    }

    static void shiftClock(TestDatabase database, String table, Duration duration) {
        Dialect dialect = database.dialect;
        long micros = -ClaimRow.micros(duration);
        database.jdbi().useHandle(handle -> handle.createUpdate("UPDATE " + table
                        + " SET lease_until = " + dialect.plusMicros("lease_until", "?")
                        + ", expires_at = " + dialect.plusMicros("expires_at", "?"))
                .bind(0, micros).bind(1, micros)
                .execute());
    }

    /** The real time a few statements take passes on the database's clock too; a second covers it. */
    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    JdbcDedupStore jdbcStore() {
        return created;
    }

    // ---------------------------------------------------------------- keys

    @Test
    void sqlInjectionKeyIsStoredByteForByteAndTheTableSurvives() {
        String id = "'; DROP TABLE " + table + "; --";
        StoreKey key = key(id);
        Acquired owner = acquire(key);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(storedIds()).containsExactly(id);
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void longestKeyIsStoredByteForByteAndOneByteMoreIsRejected() {
        String longest = "\u00e9".repeat(StoreKey.MAX_ID_BYTES / 2);
        assertThat(longest.getBytes(StandardCharsets.UTF_8)).hasSize(StoreKey.MAX_ID_BYTES);
        StoreKey key = key(longest);
        Acquired owner = acquire(key);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(storedIds()).containsExactly(longest);
        assertThat(claim(key(longest.substring(1) + "ab"))).as("same length, other bytes").isInstanceOf(Acquired.class);
        assertThatThrownBy(() -> claim(key(longest + "x")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("513 bytes")
                .hasMessageContaining("exceeds the 512 bytes");
    }

    @Test
    void keyWithUnpairedSurrogateIsRejectedRatherThanStoredAsQuestionMark() {
        assertThatThrownBy(() -> claim(key("order-\uD800")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unpaired surrogate");
        assertThat(claim(key("order-?"))).isInstanceOf(Acquired.class);
    }

    // ---------------------------------------------------------------- races beyond the contract

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void concurrentTakeoversOfExpiredClaimsAcquireEachKeyOnce() throws Exception {
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            keys.add(key("expired-" + i));
            acquire(keys.get(i));
        }
        advance(LEASE);
        Map<StoreKey, Queue<Acquired>> acquired = new ConcurrentHashMap<>();
        int threads = 8;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    List<StoreKey> order = new ArrayList<>(keys);
                    Collections.shuffle(order, new Random(thread));
                    int batch = thread % 2 == 0 ? 1 : 50;
                    start.await();
                    for (int from = 0; from < order.size(); from += batch) {
                        List<StoreKey> slice = order.subList(from, Math.min(order.size(), from + batch));
                        List<ClaimRequest> requests = slice.stream().map(AbstractJdbcDedupStoreTest::request).toList();
                        List<ClaimResult> results = store().claim(requests);
                        for (int i = 0; i < slice.size(); i++) {
                            if (results.get(i) instanceof Acquired a) {
                                acquired.computeIfAbsent(slice.get(i), k -> new ConcurrentLinkedQueue<>()).add(a);
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(90, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(acquired).hasSize(keys.size());
        acquired.forEach((key, owners) -> assertThat(owners).as("owners of %s", key.id())
                .singleElement().satisfies(a -> assertThat(a.attempt()).isEqualTo(2)));
    }

    // ---------------------------------------------------------------- listing and purge

    @Test
    void listingPagesEndAtTheLastIdAndACursorThisStoreDidNotMakeIsRefused() {
        for (String id : List.of("b", "a", "c\u00e9", "c")) {
            ClaimResult claimed = store().claim(List.of(new ClaimRequest(key(id), null, LEASE, CLAIM_RETENTION))).get(0);
            assertThat(claimed).isInstanceOf(Acquired.class);
        }

        KeyPage first = inspectable().list(namespace(), KeyFilter.ALL, null, 2);
        KeyPage second = inspectable().list(namespace(), KeyFilter.ALL, first.cursor(), 2);

        assertThat(first.keys()).extracting(k -> k.key().id()).as("in the order of the IDs' bytes").containsExactly("a", "b");
        assertThat(first.cursor()).as("the last ID's bytes in hex").isEqualTo("62");
        assertThat(second.keys()).extracting(k -> k.key().id()).containsExactly("c", "c\u00e9");
        assertThatThrownBy(() -> inspectable().list(namespace(), KeyFilter.ALL, "not hex", 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Not a cursor");
        assertThatThrownBy(() -> inspectable().purge(namespace(), Instant.now().plus(RETENTION), "62", 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Not a cursor");
    }

    @Test
    void anIdPrefixIsARangeOfThePrimaryKeyUpToItsNextBytes() {
        assertThat(JdbcDedupStore.upperBound("ab".getBytes(StandardCharsets.UTF_8)))
                .isEqualTo("ac".getBytes(StandardCharsets.UTF_8));
        assertThat(JdbcDedupStore.upperBound(new byte[] {'a', (byte) 0xC3, (byte) 0xFF, (byte) 0xFF}))
                .isEqualTo(new byte[] {'a', (byte) 0xC4});
        assertThat(JdbcDedupStore.upperBound(new byte[] {(byte) 0xFF})).as("no bytes above").isNull();
        assertThat(JdbcDedupStore.upperBound(new byte[0])).as("every ID").isNull();
    }

    // ---------------------------------------------------------------- schema

    @Test
    void schemaValidateAcceptsTheTableSchemaCreateMade() {
        try (DedupStore validated = create(config().with("schema", "validate"))) {
            validated.checkHealth();
        }
    }

    @Test
    void schemaValidateNamesTheMissingTable() {
        String absent = database().newTable("idem_absent");

        assertThatThrownBy(() -> create(database().config(absent).with("schema", "validate")))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("table '" + absent + "' does not exist")
                .hasMessageContaining("store.jdbc.schema: validate")
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + absent);
    }

    @Test
    void schemaValidateNamesEachMissingColumn() {
        String partial = database().newTable("idem_partial");
        database().jdbi().useHandle(handle -> handle.execute("CREATE TABLE " + partial
                + " (namespace VARCHAR(255) NOT NULL, id VARCHAR(255) NOT NULL, state INT, PRIMARY KEY (namespace, id))"));

        assertThatThrownBy(() -> create(database().config(partial).with("schema", "validate")))
                .isInstanceOf(StoreException.class)
                .hasMessageContaining("table '" + partial + "' lacks columns token, attempts, fingerprint, "
                        + "lease_until, expires_at, starts (it has id, namespace, state)")
                .hasMessageNotContaining("primary key")
                .hasMessageNotContaining("ALTER TABLE");
    }

    @Test
    void schemaValidateNamesTheStartsColumnATableMadeBeforeItLacksAndTheStatementThatAddsIt() {
        String old = tableMadeBeforeStarts("idem_old");
        String alter = "ALTER TABLE " + old + " ADD COLUMN starts INTEGER DEFAULT 0 NOT NULL";

        assertThatThrownBy(() -> create(database().config(old).with("schema", "validate")))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("store.jdbc.schema: validate")
                .hasMessageContaining("table '" + old + "' lacks column starts, which this version of the store needs")
                .hasMessageContaining(alter + ";")
                .hasMessageContaining("schema: create")
                .hasMessageNotContaining("CREATE TABLE");

        database().jdbi().useHandle(handle -> {
            handle.execute(alter);
            // Which validate checks too; no version without the starts column made it.
            OutboxTable.of(Dialect.forUrl(database().url, old)).createTable().forEach(handle::execute);
            WatermarkTable.of(Dialect.forUrl(database().url, old)).createTable().forEach(handle::execute);
            StepTable.of(Dialect.forUrl(database().url, old)).createTable().forEach(handle::execute);
            ReplyTable.of(Dialect.forUrl(database().url, old)).createTable().forEach(handle::execute);
        });
        try (DedupStore validated = create(database().config(old).with("schema", "validate"))) {
            validated.checkHealth();
        }
    }

    @Test
    void schemaCreateAddsTheStartsColumnToATableMadeBeforeItAndItsRowsCountFromZero() {
        String old = tableMadeBeforeStarts("idem_old");
        StoreKey key = key("order-1");
        // A claim an earlier version left behind: its lease ran out, it is still remembered.
        Dialect dialect = database().dialect;
        database().jdbi().useHandle(handle -> handle.createUpdate("INSERT INTO " + old
                        + " (namespace, id, state, token, attempts, fingerprint, lease_until, expires_at) VALUES (?, ?, "
                        + Dialect.CLAIMED + ", 77, 1, NULL, " + dialect.plusMicros(dialect.now(), "?") + ", "
                        + dialect.plusMicros(dialect.now(), "?") + ")")
                .bind(0, namespace().getBytes(StandardCharsets.UTF_8))
                .bind(1, key.id().getBytes(StandardCharsets.UTF_8))
                .bind(2, -1_000_000L)
                .bind(3, CLAIM_RETENTION.toNanos() / 1000)
                .execute());

        try (JdbcDedupStore upgraded = create(database().config(old))) {
            Acquired owner = (Acquired) upgraded.claim(List.of(request(key))).get(0);

            assertThat(owner.attempt()).as("the earlier version's claim, taken over").isEqualTo(2);
            assertThat(upgraded.recordStart(key, owner.token())).isEqualTo(1);
            assertThat(upgraded.recordStart(key, 77)).as("the earlier owner's start").isZero();
        }
        try (DedupStore validated = create(database().config(old).with("schema", "validate"))) {
            validated.checkHealth();
        }
        try (DedupStore again = create(database().config(old))) {
            again.checkHealth();
        }
    }

    @Test
    void schemaValidateRejectsTableWithoutTheKeysPrimaryKey() {
        String unkeyed = database().newTable("idem_unkeyed");
        database().jdbi().useHandle(handle -> handle.execute(database().dialect.createTable().get(0)
                .replace(database().table, unkeyed)
                .replaceAll(",\\s*PRIMARY KEY \\(namespace, id\\)", "")
                .replaceAll(",\\s*INDEX \\S+ \\(expires_at\\)", "")));

        assertThatThrownBy(() -> create(database().config(unkeyed).with("schema", "validate")))
                .isInstanceOf(StoreException.class)
                .hasMessageContaining("its primary key is missing but must be (namespace, id)");
    }

    @Test
    void schemaNoneTrustsTheTableUntilAStatementFails() {
        String absent = database().newTable("idem_trusted");
        try (DedupStore trusting = create(database().config(absent).with("schema", "none"))) {
            assertThatThrownBy(() -> trusting.claim(List.of(request(key("order-1")))))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                    .hasMessageContaining("JDBC dedup store at " + Failures.redact(database().url))
                    .hasMessageContaining("(table " + absent + "): claim of 1 keys failed");
        }
    }

    // ---------------------------------------------------------------- purge

    @Test
    void purgeDeletesExpiredRowsInBoundedBatchesAndKeepsLiveOnes() {
        try (JdbcDedupStore store = create(config().with("purge.batch-size", 7))) {
            List<StoreKey> done = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                done.add(key("done-" + i));
            }
            List<ClaimResult> owners = store.claim(done.stream().map(AbstractJdbcDedupStoreTest::request).toList());
            for (int i = 0; i < done.size(); i++) {
                assertThat(store.complete(done.get(i), ((Acquired) owners.get(i)).token(), RETENTION)).isTrue();
            }
            advance(RETENTION);
            store.claim(List.of(request(key("live-1")), request(key("live-2"))));

            Purger.Run run = store.purgeExpired();

            assertThat(run.rows()).isEqualTo(50);
            assertThat(run.batches()).as("7 full batches of 7, then a short one").isEqualTo(8);
            assertThat(storedIds()).containsExactlyInAnyOrder("live-1", "live-2");
            assertThat(store.purgeExpired()).isEqualTo(new Purger.Run(0, 1));
        }
    }

    @Test
    void scheduledPurgeRemovesExpiredRowsAndStopsOnClose() throws Exception {
        JdbcDedupStore store = create(config().with("purge.interval", "100ms"));
        try {
            Acquired owner = (Acquired) store.claim(List.of(request(key("done")))).get(0);
            store.complete(key("done"), owner.token(), RETENTION);
            advance(RETENTION);

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!storedIds().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(storedIds()).as("rows left after the scheduled purge").isEmpty();
        } finally {
            store.close();
        }
        assertThat(store.purger().isStopped()).isTrue();
    }

    // ---------------------------------------------------------------- life cycle

    @Test
    void callsAfterCloseFailWithoutRetry() {
        JdbcDedupStore store = create(config());
        store.close();
        store.close();

        assertThatThrownBy(() -> store.claim(List.of(request(key("order-1")))))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("the store is closed");
    }

    // ---------------------------------------------------------------- helpers

    /** A new table as the store made it before it recorded starts: the DDL of today without that column. */
    String tableMadeBeforeStarts(String prefix) {
        String name = database().newTable(prefix);
        List<String> ddl = database().dialect.createTable().stream()
                .map(statement -> statement.replace(database().table, name))
                .toList();
        String withoutStarts = ddl.get(0).replaceAll("\\n\\s*starts\\s[^\\n]*", "");
        assertThat(withoutStarts).as("the CREATE TABLE without its starts column").isNotEqualTo(ddl.get(0))
                .doesNotContain("starts");
        database().jdbi().useHandle(handle -> {
            handle.execute(withoutStarts);
            for (String statement : ddl.subList(1, ddl.size())) {
                handle.execute(statement);
            }
        });
        return name;
    }

    /** The ids stored under this test's namespace, decoded. */
    List<String> storedIds() {
        byte[] namespace = namespace().getBytes(StandardCharsets.UTF_8);
        Jdbi jdbi = database().jdbi();
        return jdbi.withHandle(handle -> handle.createQuery("SELECT id FROM " + table
                        + " WHERE namespace = ?")
                .bind(0, namespace)
                .map((rs, ctx) -> new String(rs.getBytes(1), StandardCharsets.UTF_8))
                .list());
    }

    static ClaimRequest request(StoreKey key) {
        return new ClaimRequest(key, null, LEASE, CLAIM_RETENTION);
    }

    ClaimResult claim(StoreKey key) {
        return store().claim(List.of(request(key))).get(0);
    }

    Acquired acquire(StoreKey key) {
        ClaimResult result = claim(key);
        assertThat(result).as("claim of %s", key.id()).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }
}
