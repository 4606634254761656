package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.StoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresDedupStoreTest extends AbstractJdbcDedupStoreTest {

    private static TestDatabase database;

    @BeforeAll
    static void locateDatabase() {
        database = TestDatabase.postgres();
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
    void lostConnectionsFailRetriablyAndTheStoreRecovers() {
        String application = "idem-test-" + UUID.randomUUID().toString().substring(0, 8);
        try (JdbcDedupStore store = create(config().with("properties", Map.of("ApplicationName", application)))) {
            store.checkHealth();
            int killed = database().jdbi().withHandle(handle -> handle.createQuery(
                            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?")
                    .bind(0, application)
                    .mapTo(Integer.class).one());
            assertThat(killed).as("the store's connections, terminated").isPositive();

            List<StoreException> failures = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                try {
                    store.claim(List.of(request(key("after-kill-" + i))));
                } catch (StoreException e) {
                    failures.add(e);
                }
            }

            assertThat(failures).allSatisfy(e -> assertThat(e.retriable()).as(e.getMessage()).isTrue());
            assertThat(store.claim(List.of(request(key("recovered"))))).first().isInstanceOf(Acquired.class);
        }
    }
}
