package dev.idem.api.guard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.ConcurrentUpdateException;
import dev.idem.api.guard.TestDatabase.Table;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class OptimisticUpdateTest {

    private static final String COLUMNS = "id VARCHAR(32) NOT NULL PRIMARY KEY, version BIGINT NOT NULL,"
            + " counter INT NOT NULL, note VARCHAR(64)";

    private static OptimisticUpdate accounts(Table table) {
        return OptimisticUpdate.of(table.name(), "id", "version");
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anUpdateAtTheReadVersionWritesTheColumnsAndIncrementsTheVersion(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            table.execute("INSERT INTO $T (id, version, counter, note) VALUES ('a-1', 4, 10, 'old'),"
                    + " ('a-2', 4, 10, 'other')");
            OptimisticUpdate update = accounts(table).withQueryTimeout(Duration.ofSeconds(5));

            Versioned<Map<String, Object>> row = update.read(connection, "a-1", "counter", "note").orElseThrow();
            assertThat(row.version()).isEqualTo(4);
            assertThat(row.value()).containsExactly(Map.entry("counter", 10), Map.entry("note", "old"));

            long next = update.update(connection, "a-1", row.version(),
                    Map.of("counter", (Integer) row.value().get("counter") + 1, "note", "new"));

            assertThat(next).isEqualTo(5);
            assertThat(table.rows("SELECT id, version, counter, note FROM $T ORDER BY id"))
                    .containsExactly("a-1 5 11 new", "a-2 4 10 other");
            assertThat(update.version(connection, "a-1")).hasValue(5);
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aStaleVersionThrowsConcurrentUpdateNamingTheRowAndBothVersions(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            table.execute("INSERT INTO $T (id, version, counter) VALUES ('a-1', 7, 0)");

            assertThatThrownBy(() -> accounts(table).update(connection, "a-1", 6, Map.of("counter", 1)))
                    .isExactlyInstanceOf(ConcurrentUpdateException.class)
                    .hasMessage(table.name() + " id='a-1' is at version 7, not the expected 6: it changed since it was"
                            + " read; the handler runs again and reads it afresh");
            assertThat(table.rows("SELECT version, counter FROM $T")).containsExactly("7 0");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aMissingRowIsAConflictSaidToBeMissing(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            OptimisticUpdate update = accounts(table);

            assertThat(update.read(connection, "a-404", "counter")).isEqualTo(Optional.empty());
            assertThat(update.version(connection, "a-404")).isEqualTo(OptionalLong.empty());
            assertThatThrownBy(() -> update.update(connection, "a-404", 0, Map.of("counter", 1)))
                    .isExactlyInstanceOf(ConcurrentUpdateException.class)
                    .hasMessage(table.name() + " has no row with id='a-404' (expected at version 0): it was deleted"
                            + " since it was read, or never existed; the handler runs again and reads it afresh");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void nullValuesWriteNullAndNoColumnsOnlyIncrementTheVersion(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            table.execute("INSERT INTO $T (id, version, counter, note) VALUES ('a-1', 0, 3, 'x')");
            OptimisticUpdate update = accounts(table);
            Map<String, Object> clearNote = new HashMap<>();
            clearNote.put("note", null);

            assertThat(update.update(connection, "a-1", 0, clearNote)).isEqualTo(1);
            assertThat(update.update(connection, "a-1", 1, Map.of())).isEqualTo(2);

            assertThat(table.rows("SELECT version, counter, note FROM $T")).containsExactly("2 3 null");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void itWritesInTheCallersTransactionAndNeverCommits(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            table.execute("INSERT INTO $T (id, version, counter) VALUES ('a-1', 0, 0)");
            connection.setAutoCommit(false);

            accounts(table).update(connection, "a-1", 0, Map.of("counter", 1));
            connection.rollback();

            assertThat(table.rows("SELECT version, counter FROM $T")).containsExactly("0 0");
        }
    }

    /**
     * Eight writers each add one to a counter many times, reading the row and writing it back at the version read,
     * each attempt in a transaction of its own, retrying on conflict as the runtime re-runs a handler. No increment
     * is lost: the counter and the version both end at the number of successful updates.
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void racingReadModifyWriteLosesNoUpdate(TestDatabase database) throws Exception {
        int threads = 8;
        int incrementsEach = 25;
        try (Table table = database.table(COLUMNS)) {
            table.execute("INSERT INTO $T (id, version, counter) VALUES ('hot', 0, 0)");
            OptimisticUpdate update = accounts(table);
            CountDownLatch start = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<int[]>> futures = new ArrayList<>();
            try {
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        int successes = 0;
                        int conflicts = 0;
                        try (Connection connection = database.connect()) {
                            connection.setAutoCommit(false);
                            start.await();
                            while (successes < incrementsEach) {
                                try {
                                    Versioned<Map<String, Object>> row = update.read(connection, "hot", "counter")
                                            .orElseThrow();
                                    int counter = ((Number) row.value().get("counter")).intValue();
                                    update.update(connection, "hot", row.version(), Map.of("counter", counter + 1));
                                    connection.commit();
                                    successes++;
                                } catch (ConcurrentUpdateException e) {
                                    connection.rollback();
                                    conflicts++;
                                    if (conflicts > 100_000) {
                                        throw new AssertionError("no progress after " + conflicts + " conflicts", e);
                                    }
                                }
                            }
                        }
                        return new int[] {successes, conflicts};
                    }));
                }
                start.countDown();
                int successes = 0;
                for (Future<int[]> future : futures) {
                    successes += future.get(120, TimeUnit.SECONDS)[0];
                }
                assertThat(successes).isEqualTo(threads * incrementsEach);
            } finally {
                pool.shutdownNow();
            }
            int total = threads * incrementsEach;
            assertThat(table.rows("SELECT version, counter FROM $T")).containsExactly(total + " " + total);
        }
    }

    @Test
    void namesMustBeSqlIdentifiersAndColumnsNotTheGuardsOwn() {
        assertThat(OptimisticUpdate.of("bank.accounts", "id", "row_version")).isNotNull();
        assertThatThrownBy(() -> OptimisticUpdate.of("accounts a", "id", "version"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Invalid table name 'accounts a': must be letters, digits and underscores");
        assertThatThrownBy(() -> OptimisticUpdate.of("accounts", "id", "version + 0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Invalid version column 'version + 0' for table accounts");
        assertThatThrownBy(() -> OptimisticUpdate.of("accounts", "v", "V"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("The version column of table accounts is V, which is already its id column; they must be"
                        + " different columns");
        OptimisticUpdate update = OptimisticUpdate.of("accounts", "id", "version");
        assertThatThrownBy(() -> update.update(null, "a-1", 0, Map.of()))
                .isInstanceOf(NullPointerException.class);
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void columnsToSetAreValidatedBeforeAnyStatement(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            table.execute("INSERT INTO $T (id, version, counter) VALUES ('a-1', 0, 0)");
            OptimisticUpdate update = accounts(table);

            assertThatThrownBy(() -> update.update(connection, "a-1", 0, Map.of("Version", 9)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("Column Version of table " + table.name() + " is set by the guard itself; leave it out"
                            + " of the columns to set");
            assertThatThrownBy(() -> update.update(connection, "a-1", 0, Map.of("counter = 99, note", "x")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("Invalid column 'counter = 99, note'");
            assertThatThrownBy(() -> update.read(connection, "a-1", "counter FROM x --"))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(table.rows("SELECT version, counter FROM $T")).containsExactly("0 0");
        }
    }
}
