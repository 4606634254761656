package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.ReplyStoreContract;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The replies' contract plus what is particular to the JDBC store: the replies table under {@code schema} (a database
 * made by the release before it is upgraded, its keys kept), its purge, and a reply row left behind by an earlier
 * life of its key. One database per subclass; each test has tables of its own. The database's clock cannot be moved,
 * so {@link #advanceStoreClock} moves the stored deadlines of both tables back instead.
 */
abstract class AbstractJdbcReplyTest extends ReplyStoreContract {

    private JdbcDedupStore created;
    private String table;

    /** The database of the subclass, found in its {@code @BeforeAll}. */
    abstract TestDatabase database();

    @Override
    protected ReplyStore createStore(ManualTicker ticker) {
        table = database().newTable("idem_replies_test");
        created = AbstractJdbcDedupStoreTest.create(database().config(table));
        return created;
    }

    /** Moves every deadline of this test's keys and replies back by {@code duration}. */
    @Override
    protected void advanceStoreClock(Duration duration) {
        AbstractJdbcDedupStoreTest.shiftClock(database(), table, duration);
        Dialect dialect = database().dialect;
        long micros = -ClaimRow.micros(duration);
        database().jdbi().useHandle(handle -> handle.createUpdate("UPDATE " + table + ReplyTable.SUFFIX
                        + " SET expires_at = " + dialect.plusMicros("expires_at", "?"))
                .bind(0, micros)
                .execute());
    }

    /** The real time a few statements take passes on the database's clock too; a second covers it. */
    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    @Test
    void databaseOfTheReleaseBeforeIsUpgradedByCreateAndNamedByValidateItsKeysKept() {
        String old = database().newTable("idem_old_replies");
        Dialect dialect = Dialect.forUrl(database().url, old);
        StoreKey before = new StoreKey(namespace(), "completed-before");
        database().jdbi().useHandle(handle -> {
            dialect.createTable().forEach(handle::execute);
            OutboxTable.of(dialect).createTable().forEach(handle::execute);
            WatermarkTable.of(dialect).createTable().forEach(handle::execute);
            StepTable.of(dialect).createTable().forEach(handle::execute);
            handle.createUpdate("INSERT INTO " + old + " (namespace, id, state, token, attempts, fingerprint,"
                            + " lease_until, expires_at, starts) VALUES (?, ?, " + Dialect.COMPLETED + ", 7, 1, NULL,"
                            + " NULL, " + dialect.plusMicros(dialect.now(), "?") + ", 0)")
                    .bind(0, ClaimRow.namespace(before)).bind(1, ClaimRow.id(before))
                    .bind(2, ClaimRow.micros(RETENTION))
                    .execute();
        });

        assertThatThrownBy(() -> AbstractJdbcDedupStoreTest.create(database().config(old).with("schema", "validate")))
                .hasMessageContaining("table '" + old + ReplyTable.SUFFIX + "' does not exist")
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + old + ReplyTable.SUFFIX);

        try (JdbcDedupStore upgraded = AbstractJdbcDedupStoreTest.create(database().config(old))) {
            assertThat(claim(upgraded, before)).as("a key completed before the upgrade")
                    .isEqualTo(new ClaimResult.Duplicate(true));
            assertThat(upgraded.reply(before)).isEmpty();
            StoreKey after = new StoreKey(namespace(), "completed-after");
            Acquired owner = (Acquired) claim(upgraded, after);
            assertThat(upgraded.completeWithReply(after, owner.token(), RETENTION, reply("after"))).isTrue();
            assertThat(upgraded.reply(after)).contains(reply("after"));
        }
        try (JdbcDedupStore validated = AbstractJdbcDedupStoreTest.create(database().config(old)
                .with("schema", "validate"))) {
            assertThat(validated.reply(new StoreKey(namespace(), "completed-after"))).contains(reply("after"));
        }
    }

    @Test
    void purgeDeletesForgottenRepliesOnly() {
        StoreKey kept = key("kept");
        StoreKey forgotten = key("forgotten");
        assertThat(store().completeWithReply(forgotten, acquire(forgotten).token(), Duration.ofMinutes(1),
                reply("old"))).isTrue();
        assertThat(store().completeWithReply(kept, acquire(kept).token(), RETENTION, reply("new"))).isTrue();
        advance(Duration.ofMinutes(2));

        Purger.Run run = created.purger().purgeExpiredReplies();

        assertThat(run.rows()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
        assertThat(store().reply(kept)).contains(reply("new"));
    }

    @Test
    void replyRowOfAnEarlierLifeIsNeverShown() {
        StoreKey key = key("order-1");
        assertThat(store().completeWithReply(key, acquire(key).token(), RETENTION, reply("earlier"))).isTrue();
        // The keys row is gone (purged early by hand) while its reply's row stays.
        database().jdbi().useHandle(handle -> handle.createUpdate("DELETE FROM " + table).execute());

        Acquired fresh = acquire(key);
        assertThat(store().complete(key, fresh.token(), RETENTION)).isTrue();

        assertThat(rows()).as("left to the purge").isEqualTo(1);
        assertThat(store().reply(key)).isEmpty();
    }

    @Test
    void keyCompletedWithoutAReplyWritesNoRow() {
        StoreKey key = key("order-1");

        assertThat(store().complete(key, acquire(key).token(), RETENTION)).isTrue();

        assertThat(rows()).isZero();
    }

    private long rows() {
        return database().jdbi().withHandle(handle -> handle.createQuery("SELECT COUNT(*) FROM " + table
                + ReplyTable.SUFFIX).mapTo(Long.class).one());
    }

    private static ClaimResult claim(JdbcDedupStore store, StoreKey key) {
        return store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
    }
}
