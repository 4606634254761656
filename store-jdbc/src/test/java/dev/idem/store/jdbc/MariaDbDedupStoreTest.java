package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import java.util.List;
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

    @Test
    void mysqlSchemeUrlReachesTheServerThroughTheMariaDbDriver() {
        String url = database().url.replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
        try (DedupStore store = create(config().with("url", url))) {
            assertThat(store.claim(List.of(request(key("order-1"))))).first().isInstanceOf(Acquired.class);
        }
    }
}
