package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.DefaultStatementBuilder;
import org.jdbi.v3.core.statement.StatementContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class MariaDbDedupStoreTest extends AbstractJdbcDedupStoreTest {

    private static TestDatabase database;

    @BeforeAll
    static void locateDatabase() {
        database = TestDatabase.mariadb();
    }

    @AfterAll
    static void dropTables() {
        if (database != null) {
            database.dropTables();
        }
    }

    @Override
    TestDatabase database() {
        return database;
    }

    @Test
    void mariaDbAnswersABatchClaimFromTheUpsertsOwnReturning() {
        assertThat(jdbcStore().dialect()).isInstanceOfSatisfying(MariaDbDialect.class,
                d -> assertThat(d.product()).isEqualTo("MariaDB"));
    }

    /** The path MySQL takes, which has no RETURNING: the upsert, then a read of the batch's rows. */
    @Test
    void withoutReturningTheUpsertIsFollowedByAReadOfTheBatch() {
        MariaDbDialect withoutReturning = new MariaDbDialect(table());
        StoreKey fresh = key("fresh");
        StoreKey held = key("held");
        Acquired owner = acquire(held);

        List<StoredRow> rows = database().jdbi().withHandle(handle -> withoutReturning.claim(handle, List.of(
                ClaimRow.claim(0, fresh, null, LEASE, CLAIM_RETENTION, 11),
                ClaimRow.claim(1, held, null, LEASE, CLAIM_RETENTION, 12))));

        assertThat(rows.get(0).token()).isEqualTo(11);
        assertThat(rows.get(1).token()).isEqualTo(owner.token());
        assertThat(StoredRow.resultFor(ClaimRow.claim(1, held, null, LEASE, CLAIM_RETENTION, 12), rows.get(1)))
                .isInstanceOf(InProgress.class);
    }

    /**
     * The batch's update counts tell which rows it completed. A driver may answer a batch without them
     * (MariaDB's with {@code useBulkStmts}, for a statement prepared without generated keys; Jdbi's are prepared
     * with them, so the store's own batches are counted): the batch is then rolled back and its rows are
     * completed one by one, with the same answers, a completion kept for no time included.
     */
    @Test
    void completionBatchThatTheDriverDoesNotCountRowByRowIsCompletedOneByOneWithTheSameAnswers() {
        StoreKey owned = key("owned");
        StoreKey released = key("released");
        StoreKey retried = key("retried");
        StoreKey forgotten = key("forgotten");
        List<Acquired> owners = store().claim(List.of(claimOf(owned), claimOf(released), claimOf(retried),
                claimOf(forgotten))).stream().map(Acquired.class::cast).toList();
        assertThat(store().release(released, owners.get(1).token())).isTrue();
        assertThat(store().complete(retried, owners.get(2).token(), RETENTION)).isTrue();
        Jdbi bulk = Jdbi.create(database().url + (database().url.contains("?") ? "&" : "?") + "useBulkStmts=true",
                database().username, "");
        // Prepared as plain JDBC prepares them: without generated keys, which lets the driver send a bulk.
        bulk.setStatementBuilderFactory(connection -> new DefaultStatementBuilder() {
            @Override
            public PreparedStatement create(Connection conn, String sql, StatementContext ctx) throws SQLException {
                return conn.prepareStatement(sql);
            }
        });
        int[] counts = bulk.withHandle(handle -> handle.prepareBatch("UPDATE " + table()
                        + " SET starts = starts WHERE id = ?")
                .bind(0, new byte[] {1}).add().bind(0, new byte[] {2}).add().execute());
        assertThat(counts).as("the premise: this driver answers the batch without counts")
                .containsOnly(Statement.SUCCESS_NO_INFO);
        List<ClaimRow> rows = new ArrayList<>(List.of(
                ClaimRow.completion(0, owned, owners.get(0).token(), RETENTION),
                ClaimRow.completion(1, released, owners.get(1).token(), RETENTION),
                ClaimRow.completion(2, retried, owners.get(2).token(), RETENTION),
                ClaimRow.completion(3, forgotten, owners.get(3).token(), Duration.ZERO)));
        Collections.sort(rows);

        boolean[] done = bulk.withHandle(handle -> jdbcStore().dialect().completeAll(handle, rows));

        for (int i = 0; i < rows.size(); i++) {
            assertThat(done[i]).as("completion of row %s", rows.get(i)).isEqualTo(rows.get(i).index() != 1);
        }
        assertThat(store().claim(List.of(claimOf(owned), claimOf(retried)))).containsOnly(new Duplicate(true));
        assertThat(jdbcStore().claim(List.of(claimOf(forgotten))).get(0)).as("kept for no time, so fresh")
                .isInstanceOfSatisfying(Acquired.class, fresh -> assertThat(fresh.attempt()).isEqualTo(1));
    }

    private static ClaimRequest claimOf(StoreKey key) {
        return new ClaimRequest(key, null, LEASE, CLAIM_RETENTION);
    }

    @Test
    void mysqlSchemeUrlReachesTheServerThroughTheMariaDbDriver() {
        String url = database().url.replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
        try (DedupStore store = create(config().with("url", url))) {
            assertThat(store.claim(List.of(request(key("order-1"))))).first().isInstanceOf(Acquired.class);
        }
    }
}
