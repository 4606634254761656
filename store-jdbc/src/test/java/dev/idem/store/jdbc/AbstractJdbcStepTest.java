package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.GroupMember;
import dev.idem.spi.TransactionalDedupStore.GroupResult;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.StepStoreContract;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The durable steps' contract plus what is particular to the JDBC store: the steps table under {@code schema}, its
 * purge, and steps recorded from inside a transactional run, whose transaction holds the key's row: recorded at once,
 * outside that transaction, without waiting for its lock, and kept when it rolls back. One database per subclass; each
 * test has tables of its own. The database's clock cannot be moved, so {@link #advanceStoreClock} moves the stored
 * deadlines of both tables back instead.
 */
abstract class AbstractJdbcStepTest extends StepStoreContract {

    private JdbcDedupStore created;
    private String table;

    /** The database of the subclass, found in its {@code @BeforeAll}. */
    abstract TestDatabase database();

    @Override
    protected StepStore createStore(ManualTicker ticker) {
        table = database().newTable("idem_steps_test");
        created = AbstractJdbcDedupStoreTest.create(database().config(table));
        return created;
    }

    /** Moves every deadline of this test's keys and steps back by {@code duration}. */
    @Override
    protected void advanceStoreClock(Duration duration) {
        AbstractJdbcDedupStoreTest.shiftClock(database(), table, duration);
        Dialect dialect = database().dialect;
        long micros = -ClaimRow.micros(duration);
        database().jdbi().useHandle(handle -> handle.createUpdate("UPDATE " + table + StepTable.SUFFIX
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
    void schemaValidateNamesTheMissingStepsTableAndCreateMakesIt() {
        String old = database().newTable("idem_old_steps");
        Dialect dialect = Dialect.forUrl(database().url, old);
        database().jdbi().useHandle(handle -> {
            dialect.createTable().forEach(handle::execute);
            OutboxTable.of(dialect).createTable().forEach(handle::execute);
            WatermarkTable.of(dialect).createTable().forEach(handle::execute);
        });

        assertThatThrownBy(() -> AbstractJdbcDedupStoreTest.create(database().config(old).with("schema", "validate")))
                .hasMessageContaining("table '" + old + StepTable.SUFFIX + "' does not exist")
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + old + StepTable.SUFFIX);

        try (JdbcDedupStore upgraded = AbstractJdbcDedupStoreTest.create(database().config(old))) {
            upgraded.checkHealth();
        }
        try (JdbcDedupStore validated = AbstractJdbcDedupStoreTest.create(database().config(old)
                .with("schema", "validate"))) {
            validated.checkHealth();
        }
    }

    @Test
    void purgeDeletesForgottenStepsOnly() {
        StoreKey kept = key("kept");
        StoreKey forgotten = key("forgotten");
        acquire(kept);
        Acquired forgottenOwner = acquire(forgotten);
        assertThat(store().recordStep(forgotten, forgottenOwner.token(), "charge", utf8("old"))).isTrue();
        advance(LEASE.plus(CLAIM_RETENTION).plus(clockResolution()));
        Acquired keptNow = acquire(kept);
        assertThat(store().recordStep(kept, keptNow.token(), "charge", utf8("new"))).isTrue();

        Purger.Run run = created.purger().purgeExpiredSteps();

        assertThat(run.rows()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
        assertThat(stepsOf(kept, keptNow)).containsOnlyKeys("charge");
    }

    @Test
    @Timeout(30)
    void stepRecordedInsideATransactionalRunIsWrittenAtOnceWithoutWaitingAndOutlivesItsRollback() throws Exception {
        StoreKey key = key("order-1");
        Acquired claim = acquire(key);

        assertThatThrownBy(() -> created.runOnce(key, null, RETENTION, transaction -> {
            assertThat(created.recordStep(key, claim.token(), "charge", utf8("ch_1")))
                    .as("recorded while the run's transaction holds the key's row").isTrue();
            assertThat(rows()).as("committed at once, outside the run's transaction").isEqualTo(1);
            throw new IllegalStateException("the handler fails after its step");
        })).hasMessageContaining("after its step");

        assertThat(stepsOf(key, claim).get("charge")).as("kept through the rollback").isEqualTo(utf8("ch_1"));

        Outcome outcome = created.runOnce(key, null, RETENTION, transaction -> {
            assertThat(created.steps(key, claim.token())).hasValueSatisfying(
                    steps -> assertThat(steps).containsOnlyKeys("charge"));
        });
        assertThat(outcome).isEqualTo(Outcome.COMMITTED);
        assertThat(created.steps(key, claim.token())).as("completed: nobody's claim any more").isEmpty();
    }

    @Test
    @Timeout(30)
    void stepsOfAGroupsMembersAreRecordedBesideTheGroupsTransaction() {
        StoreKey first = key("order-1");
        StoreKey second = key("order-2");
        Acquired firstClaim = acquire(first);
        Acquired secondClaim = acquire(second);

        List<GroupResult> results = created.runGroup(List.of(
                new GroupMember(first, null, RETENTION, null, false, transaction ->
                        assertThat(created.recordStep(first, firstClaim.token(), "charge", utf8("1"))).isTrue()),
                new GroupMember(second, null, RETENTION, null, false, transaction -> {
                    assertThat(created.recordStep(second, secondClaim.token(), "charge", utf8("2"))).isTrue();
                    throw new IllegalStateException("rolled back to its savepoint");
                })), TransactionalDedupStore.Savepoints.PER_MESSAGE);

        assertThat(results.get(0)).isEqualTo(new GroupResult.Done(Outcome.COMMITTED));
        assertThat(results.get(1)).isInstanceOf(GroupResult.Failed.class);
        assertThat(stepsOf(second, secondClaim).get("charge")).isEqualTo(utf8("2"));
        assertThat(rows()).as("both recorded, neither undone").isEqualTo(2);
    }

    private long rows() {
        return database().jdbi().withHandle(handle -> handle.createQuery("SELECT COUNT(*) FROM " + table
                + StepTable.SUFFIX).mapTo(Long.class).one());
    }
}
