package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TransactionalSequenceContract;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The sequence guard's contract kit (transactional mode included) plus what is particular to the JDBC store: the
 * watermark table's shape under {@code schema}, its purge, and that a completion and its watermark commit or roll
 * back together. One database per subclass; each test has tables of its own. The database's clock cannot be moved,
 * so {@link #advanceStoreClock} moves the stored deadlines of both tables back instead.
 */
abstract class AbstractJdbcSequenceTest extends TransactionalSequenceContract {

    private JdbcDedupStore created;
    private String table;

    /** The database of the subclass, found in its {@code @BeforeAll}. */
    abstract TestDatabase database();

    @Override
    protected SequencedDedupStore createStore(ManualTicker ticker) {
        table = database().newTable("idem_seq_test");
        created = AbstractJdbcDedupStoreTest.create(database().config(table));
        return created;
    }

    /** Moves every deadline of this test's keys and watermarks back by {@code duration}. */
    @Override
    protected void advanceStoreClock(Duration duration) {
        AbstractJdbcDedupStoreTest.shiftClock(database(), table, duration);
        Dialect dialect = database().dialect;
        long micros = -ClaimRow.micros(duration);
        database().jdbi().useHandle(handle -> handle.createUpdate("UPDATE " + table + WatermarkTable.SUFFIX
                        + " SET expires_at = " + dialect.plusMicros("expires_at", "?"))
                .bind(0, micros)
                .execute());
    }

    /** The real time a few statements take passes on the database's clock too; a second covers it. */
    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    // ---------------------------------------------------------------- schema

    @Test
    void schemaCreateMakesTheWatermarkTableBesideTheKeysAndValidateAcceptsIt() {
        assertThat(rows()).isZero();
        try (DedupStore validated = AbstractJdbcDedupStoreTest.create(database().config(table).with("schema", "validate"))) {
            validated.checkHealth();
        }
    }

    @Test
    void schemaValidateNamesTheMissingWatermarkTableAndTheStatementsThatCreateIt() {
        String old = tableMadeBeforeWatermarks();

        assertThatThrownBy(() -> AbstractJdbcDedupStoreTest.create(database().config(old).with("schema", "validate")))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("store.jdbc.schema: validate")
                .hasMessageContaining("table '" + old + WatermarkTable.SUFFIX + "' does not exist")
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + old + WatermarkTable.SUFFIX)
                .hasMessageContaining("schema: create");

        try (JdbcDedupStore upgraded = AbstractJdbcDedupStoreTest.create(database().config(old))) {
            assertThat(upgraded.watermark(aggregate("account-1"))).as("schema: create made it").isZero();
        }
        try (DedupStore validated = AbstractJdbcDedupStoreTest.create(database().config(old).with("schema", "validate"))) {
            validated.checkHealth();
        }
    }

    @Test
    void schemaValidateNamesTheWatermarkTablesMissingColumnsAndPrimaryKey() {
        String odd = tableMadeBeforeWatermarks();
        database().jdbi().useHandle(handle -> handle.execute("CREATE TABLE " + odd + WatermarkTable.SUFFIX
                + " (namespace VARCHAR(255) NOT NULL, aggregate VARCHAR(255) NOT NULL)"));

        assertThatThrownBy(() -> AbstractJdbcDedupStoreTest.create(database().config(odd).with("schema", "validate")))
                .isInstanceOf(StoreException.class)
                .hasMessageContaining("table '" + odd + WatermarkTable.SUFFIX
                        + "' lacks columns watermark, expires_at (it has aggregate, namespace)")
                .hasMessageContaining("its primary key is missing but must be (namespace, aggregate)");
    }

    // ---------------------------------------------------------------- atomicity

    @Test
    void completionWhoseWatermarkCannotBeRaisedIsRolledBackWithIt() {
        StoreKey key = key("event-1");
        Acquired owner = acquire(key);
        database().jdbi().useHandle(handle -> handle.execute("DROP TABLE " + table + WatermarkTable.SUFFIX));

        assertThatThrownBy(() -> store().completeAndAdvance(key, owner.token(), RETENTION,
                advanceTo(aggregate("account-1"), 1)))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse());
        assertThat(claim(key)).as("the key, still claimed: its completion was rolled back")
                .isInstanceOf(InProgress.class);
        assertThatThrownBy(() -> store().completeAll(List.of(new CompletionRequest(key, owner.token(), RETENTION,
                advanceTo(aggregate("account-1"), 1))))).isInstanceOf(StoreException.class);
        assertThat(claim(key)).isInstanceOf(InProgress.class);

        assertThat(store().completeAll(List.of(new CompletionRequest(key, owner.token(), RETENTION))))
                .as("the same completion without an advance").containsExactly(CompletionResult.COMPLETED);
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void runsWorkInTheTransactionThatRaisesTheWatermarkAndRollsBackBothOnFailure() throws Exception {
        String business = database().newTable("idem_seq_business");
        database().jdbi().useHandle(handle -> handle.execute("CREATE TABLE " + business + " (n BIGINT NOT NULL)"));
        StoreKey account = aggregate("account-1");

        assertThat(run(key("event-1"), account, 1, true, tx -> insert(tx.unwrap(Connection.class), business, 1)))
                .isEqualTo(Outcome.COMMITTED);
        assertThatThrownBy(() -> run(key("event-2"), account, 2, true, tx -> {
            insert(tx.unwrap(Connection.class), business, 2);
            throw new IllegalStateException("after the write");
        })).hasMessage("after the write");

        List<Long> written = database().jdbi().withHandle(handle -> handle.createQuery("SELECT n FROM " + business)
                .mapTo(Long.class).list());
        assertThat(written).containsExactly(1L);
        assertThat(store().watermark(account)).isEqualTo(1);
    }

    // ---------------------------------------------------------------- purge

    @Test
    void purgeDeletesForgottenWatermarksInBoundedBatchesAndKeepsLiveOnes() {
        try (JdbcDedupStore store = AbstractJdbcDedupStoreTest.create(database().config(table).with("purge.batch-size", 4))) {
            for (int i = 1; i <= 10; i++) {
                completeAndAdvance(key("old-" + i), aggregate("old-" + i), i);
            }
            advance(SEQUENCE_RETENTION);
            completeAndAdvance(key("live-1"), aggregate("live-1"), 1);

            Purger.Run run = store.purger().purgeExpiredWatermarks();

            assertThat(run).isEqualTo(new Purger.Run(10, 3));
            assertThat(rows()).isEqualTo(1);
            assertThat(store.watermark(aggregate("live-1"))).isEqualTo(1);
            assertThat(store.purger().purgeExpiredWatermarks()).isEqualTo(new Purger.Run(0, 1));
        }
    }

    @Test
    void aggregateOfTheLongestIdIsStoredByteForByteAndOneByteMoreIsRejected() {
        String longest = "\u00e9".repeat(StoreKey.MAX_ID_BYTES / 2);
        completeAndAdvance(key("event-1"), aggregate(longest), 1);

        assertThat(store().watermark(aggregate(longest))).isEqualTo(1);
        List<String> stored = database().jdbi().withHandle(handle -> handle.createQuery("SELECT aggregate FROM " + table
                        + WatermarkTable.SUFFIX).map((rs, ctx) -> new String(rs.getBytes(1), StandardCharsets.UTF_8))
                .list());
        assertThat(stored).containsExactly(longest);
        Acquired owner = acquire(key("event-2"));
        assertThatThrownBy(() -> store().completeAndAdvance(key("event-2"), owner.token(), RETENTION,
                advanceTo(aggregate(longest + "x"), 2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exceeds the 512 bytes");
    }

    // ---------------------------------------------------------------- helpers

    /** Rows of this test's watermark table, forgotten ones included. */
    private long rows() {
        return database().jdbi().withHandle(handle -> handle.createQuery("SELECT COUNT(*) FROM " + table
                + WatermarkTable.SUFFIX).mapTo(Long.class).one());
    }

    /** A keys table (with its outbox) as an earlier version made it, without the watermark table. */
    private String tableMadeBeforeWatermarks() {
        String name = database().newTable("idem_old");
        Dialect dialect = Dialect.forUrl(database().url, name);
        database().jdbi().useHandle(handle -> {
            dialect.createTable().forEach(handle::execute);
            OutboxTable.of(dialect).createTable().forEach(handle::execute);
        });
        return name;
    }

    private static void insert(Connection connection, String table, long n) throws Exception {
        try (var statement = connection.prepareStatement("INSERT INTO " + table + " (n) VALUES (?)")) {
            statement.setLong(1, n);
            statement.executeUpdate();
        }
    }
}
