package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.OutboxStore;
import dev.idem.spi.StoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresOutboxStoreTest extends AbstractJdbcOutboxTest {

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

    /**
     * The relay's connection is terminated while it publishes: the deletion cannot commit, so the call fails
     * retriably and every row stays, the one published included, to be published again once the store has
     * connections anew.
     */
    @Test
    void relayWhoseConnectionIsLostFailsRetriablyAndLeavesEveryRow() throws Exception {
        appendCommitted(store(), namespace(), messages("m", 3));
        String application = "idem-outbox-" + UUID.randomUUID().toString().substring(0, 8);
        try (OutboxStore relay = create(config().with("properties", Map.of("ApplicationName", application)))) {
            List<String> published = new ArrayList<>();

            assertThatThrownBy(() -> relay.relay(10, record -> {
                published.add(record.message().messageId());
                if (published.size() == 1) {
                    terminateConnectionsOf(application);
                }
            }))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).as(e.getMessage()).isTrue())
                    .hasMessageContaining("they stay, to be published again");

            assertThat(store().backlog().rows()).as("rows left").isEqualTo(3);
            List<String> again = new ArrayList<>();
            for (int attempt = 0; attempt < 10 && again.isEmpty(); attempt++) {
                try {
                    relay.relay(10, record -> again.add(record.message().messageId()));
                } catch (StoreException e) {
                    assertThat(e.retriable()).as(e.getMessage()).isTrue();
                    again.clear();
                }
            }
            assertThat(again).containsExactly("m-0", "m-1", "m-2");
        }
    }

    private static void terminateConnectionsOf(String application) {
        int killed = database.jdbi().withHandle(handle -> handle.createQuery(
                        "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE application_name = ?")
                .bind(0, application)
                .mapTo(Integer.class).one());
        assertThat(killed).as("the relay's connections, terminated").isPositive();
    }
}
