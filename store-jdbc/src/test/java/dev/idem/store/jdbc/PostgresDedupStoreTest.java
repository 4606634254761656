package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
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

    /**
     * A batch larger than one statement runs as several, each committed on its own. A statement that fails
     * after an earlier one landed reports its own keys failed and leaves the earlier keys completed; a batch
     * whose first statement fails throws, as nothing of it landed. The failure is a trigger refusing one key.
     */
    @Test
    void completionStatementThatFailsAfterAnEarlierOneLandedFailsItsOwnKeysAlone() {
        String refuse = table() + "_refuse";
        database().jdbi().useHandle(handle -> {
            handle.execute("CREATE FUNCTION " + refuse + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " RAISE EXCEPTION 'refused by a trigger'; END $$");
            handle.execute("CREATE TRIGGER " + refuse + " BEFORE UPDATE ON " + table() + " FOR EACH ROW"
                    + " WHEN (NEW.state = " + Dialect.COMPLETED + " AND NEW.id = convert_to('b-refused', 'UTF8'))"
                    + " EXECUTE FUNCTION " + refuse + "()");
        });
        try {
            // Keys sort by their bytes: the first statement takes a-0000 to a-0999, the second the rest.
            List<StoreKey> keys = new ArrayList<>();
            for (int i = 0; i < Dialect.MAX_ROWS_PER_STATEMENT; i++) {
                keys.add(key("a-%04d".formatted(i)));
            }
            keys.add(key("b-refused"));
            keys.add(key("c-after"));
            List<CompletionRequest> completions = new ArrayList<>();
            for (int from = 0; from < keys.size(); from += Dialect.MAX_ROWS_PER_STATEMENT) {
                List<StoreKey> slice = keys.subList(from, Math.min(keys.size(), from + Dialect.MAX_ROWS_PER_STATEMENT));
                List<ClaimResult> claimed = store().claim(slice.stream().map(AbstractJdbcDedupStoreTest::request).toList());
                for (int i = 0; i < slice.size(); i++) {
                    completions.add(new CompletionRequest(slice.get(i), ((Acquired) claimed.get(i)).token(), RETENTION));
                }
            }
            // Request order is not key order: the results still come back in request order.
            List<CompletionRequest> requests = new ArrayList<>(completions.subList(1000, 1002));
            requests.addAll(completions.subList(0, 1000));

            List<CompletionResult> results = store().completeAll(requests);

            assertThat(results.subList(0, 2)).as("the second statement's keys").allSatisfy(r ->
                    assertThat(r).isInstanceOfSatisfying(CompletionResult.Failed.class, failed -> assertThat(failed.cause())
                            .hasMessageContaining("refused by a trigger")
                            .hasMessageContaining("completion of 2 keys")));
            assertThat(results.subList(2, 1002)).as("the first statement's keys").containsOnly(CompletionResult.COMPLETED);
            assertThat(store().claim(List.of(request(key("c-after")), request(key("a-0000")))))
                    .as("c-after was not completed, a-0000 was")
                    .satisfies(r -> assertThat(r.get(0)).isInstanceOf(ClaimResult.InProgress.class))
                    .satisfies(r -> assertThat(r.get(1)).isEqualTo(new Duplicate(true)));

            assertThatThrownBy(() -> store().completeAll(List.of(completions.get(1000), completions.get(1001))))
                    .as("a batch of one statement, which failed: nothing landed")
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                    .hasMessageContaining("refused by a trigger");
        } finally {
            database().jdbi().useHandle(handle -> {
                handle.execute("DROP TRIGGER IF EXISTS " + refuse + " ON " + table());
                handle.execute("DROP FUNCTION IF EXISTS " + refuse + "()");
            });
        }
    }
}
