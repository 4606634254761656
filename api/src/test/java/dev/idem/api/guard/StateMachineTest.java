package dev.idem.api.guard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.RejectedException;
import dev.idem.api.guard.TestDatabase.Table;
import dev.idem.api.guard.Transition.Outcome;
import java.sql.Connection;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class StateMachineTest {

    private static final String COLUMNS = "id VARCHAR(32) NOT NULL PRIMARY KEY, status VARCHAR(16),"
            + " version BIGINT NOT NULL DEFAULT 0, paid_at TIMESTAMP NULL, note VARCHAR(64)";

    private static StateMachine orders(Table table) {
        return StateMachine.of(table.name(), "id", "status")
                .allow(List.of("NEW", "CREATED"), "pay", "PAID")
                .allow("PAID", "ship", "SHIPPED")
                .allow(List.of("NEW", "CREATED"), "cancel", "CANCELLED");
    }

    private static void insert(Table table, String id, String status) throws Exception {
        table.execute("INSERT INTO $T (id, status) VALUES ('" + id + "', " + (status == null ? "NULL" : "'" + status
                + "'") + ")");
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anEventInAFromStateIsAppliedWithOneUpdate(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "CREATED");

            Transition transition = orders(table).apply(connection, "o-1", "pay");

            assertThat(transition.outcome()).isEqualTo(Outcome.APPLIED);
            assertThat(transition.applied()).isTrue();
            assertThat(transition.state()).isEqualTo("PAID");
            assertThat(transition.exists()).isTrue();
            assertThat(transition.reason()).isEqualTo(table.name() + " id='o-1' moved to PAID on event 'pay'");
            assertThat(table.rows("SELECT id, status, version FROM $T")).containsExactly("o-1 PAID 0");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anEventWhoseTargetTheRowHoldsIsAlreadyAndWritesNothing(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "PAID");
            StateMachine machine = orders(table).withVersion("version");

            Transition transition = machine.require(connection, "o-1", "pay", Map.of("note", "second payment"));

            assertThat(transition.outcome()).isEqualTo(Outcome.ALREADY);
            assertThat(transition.state()).isEqualTo("PAID");
            assertThat(transition.reason()).isEqualTo(table.name() + " id='o-1' is already PAID, the target of event"
                    + " 'pay'");
            assertThat(table.rows("SELECT status, version, note FROM $T")).containsExactly("PAID 0 null");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anEventInAnotherStateIsIllegalAndRequireRejectsItNamingEverything(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "CANCELLED");
            StateMachine machine = orders(table);

            Transition transition = machine.apply(connection, "o-1", "pay");

            assertThat(transition.outcome()).isEqualTo(Outcome.ILLEGAL);
            assertThat(transition.state()).isEqualTo("CANCELLED");
            assertThat(transition.exists()).isTrue();
            String reason = table.name() + " id='o-1' is CANCELLED: event 'pay' applies only in [NEW, CREATED]"
                    + " (leading to PAID)";
            assertThat(transition.reason()).isEqualTo(reason);
            assertThatThrownBy(() -> machine.require(connection, "o-1", "pay"))
                    .isExactlyInstanceOf(RejectedException.class)
                    .hasMessage(reason);
            assertThat(table.rows("SELECT status FROM $T")).containsExactly("CANCELLED");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aMissingRowIsIllegalAndSaidToBeMissing(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            StateMachine machine = orders(table);

            Transition transition = machine.apply(connection, "o-404", "pay");

            assertThat(transition.outcome()).isEqualTo(Outcome.ILLEGAL);
            assertThat(transition.exists()).isFalse();
            assertThat(transition.state()).isNull();
            assertThatThrownBy(() -> machine.require(connection, "o-404", "pay"))
                    .isInstanceOf(RejectedException.class)
                    .hasMessage(table.name() + " has no row with id='o-404': event 'pay' applies only in [NEW, CREATED]"
                            + " (leading to PAID)");
            assertThat(table.rows("SELECT id FROM $T")).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aRowWithoutAStateIsIllegalButExists(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", null);

            Transition transition = orders(table).apply(connection, "o-1", "pay");

            assertThat(transition.outcome()).isEqualTo(Outcome.ILLEGAL);
            assertThat(transition.exists()).isTrue();
            assertThat(transition.reason()).startsWith(table.name() + " id='o-1' has no status (NULL): event 'pay'");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anAppliedTransitionAlsoSetsTheGivenColumnsAndBumpsTheVersion(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "NEW");
            insert(table, "o-2", "NEW");
            StateMachine machine = orders(table).withVersion("version").withQueryTimeout(Duration.ofSeconds(5));
            Timestamp paidAt = Timestamp.valueOf("2025-01-02 03:04:05");

            assertThat(machine.apply(connection, "o-1", "pay", Map.of("paid_at", paidAt, "note", "card")).outcome())
                    .isEqualTo(Outcome.APPLIED);
            assertThat(machine.apply(connection, "o-1", "ship").outcome()).isEqualTo(Outcome.APPLIED);

            assertThat(table.rows("SELECT id, status, version, note FROM $T ORDER BY id"))
                    .containsExactly("o-1 SHIPPED 2 card", "o-2 NEW 0 null");
            assertThat(table.rows("SELECT paid_at FROM $T WHERE id = 'o-1'").get(0)).startsWith("2025-01-02");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void itWritesInTheCallersTransactionAndNeverCommits(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "NEW");
            connection.setAutoCommit(false);

            assertThat(orders(table).apply(connection, "o-1", "pay").outcome()).isEqualTo(Outcome.APPLIED);
            connection.rollback();

            assertThat(table.rows("SELECT status FROM $T")).containsExactly("NEW");
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anUnknownEventIsAnErrorNamingTheDeclaredOnes(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "NEW");

            assertThatThrownBy(() -> orders(table).apply(connection, "o-1", "payed"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("Unknown event 'payed' for " + table.name() + ": the declared events are [pay, ship,"
                            + " cancel]");
            assertThat(table.rows("SELECT status FROM $T")).containsExactly("NEW");
        }
    }

    /**
     * Eight transactions apply one event to the same rows at once: per row, exactly one reports APPLIED, the
     * others ALREADY (never ILLEGAL: each sees the winner's committed state, not a stale one).
     */
    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void racingTransactionsApplyATransitionExactlyOnce(TestDatabase database) throws Exception {
        int threads = 8;
        int rows = 20;
        try (Table table = database.table(COLUMNS)) {
            for (int row = 0; row < rows; row++) {
                insert(table, "o-" + row, "NEW");
            }
            StateMachine machine = orders(table).withVersion("version");
            CyclicBarrier barrier = new CyclicBarrier(threads);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<List<Outcome>>> futures = new ArrayList<>();
            try {
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        List<Outcome> outcomes = new ArrayList<>();
                        try (Connection connection = database.connect()) {
                            connection.setAutoCommit(false);
                            for (int row = 0; row < rows; row++) {
                                barrier.await(30, TimeUnit.SECONDS);
                                outcomes.add(machine.apply(connection, "o-" + row, "pay").outcome());
                                connection.commit();
                            }
                        }
                        return outcomes;
                    }));
                }
                for (int row = 0; row < rows; row++) {
                    Map<Outcome, Integer> counts = new EnumMap<>(Outcome.class);
                    for (Future<List<Outcome>> future : futures) {
                        counts.merge(future.get(60, TimeUnit.SECONDS).get(row), 1, Integer::sum);
                    }
                    assertThat(counts).as("row o-%d", row).containsExactlyInAnyOrderEntriesOf(
                            Map.of(Outcome.APPLIED, 1, Outcome.ALREADY, threads - 1));
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(table.rows("SELECT status, version, COUNT(*) FROM $T GROUP BY status, version"))
                    .containsExactly("PAID 1 " + rows);
        }
    }

    @Test
    void decideAppliesTheSameRulesToAStateKeptElsewhere() {
        StateMachine machine = StateMachine.of("orders", "id", "status").allow("CREATED", "pay", "PAID");

        assertThat(machine.decide("o-1", "CREATED", "pay").outcome()).isEqualTo(Outcome.APPLIED);
        assertThat(machine.decide("o-1", "PAID", "pay").outcome()).isEqualTo(Outcome.ALREADY);
        Transition missing = machine.decide("o-1", null, "pay");
        assertThat(missing.outcome()).isEqualTo(Outcome.ILLEGAL);
        assertThat(missing.exists()).isFalse();
        assertThatThrownBy(() -> machine.decide(17L, "SHIPPED", "pay").orReject())
                .isInstanceOf(RejectedException.class)
                .hasMessage("orders id=17 is SHIPPED: event 'pay' applies only in [CREATED] (leading to PAID)");
    }

    @Test
    void allowReturnsANewMachineAndLeavesTheOriginalAsItWas() {
        StateMachine base = StateMachine.of("orders", "id", "status").allow("NEW", "pay", "PAID");
        StateMachine more = base.allow("CREATED", "pay", "PAID").allow("PAID", "ship", "SHIPPED");

        assertThat(base.events()).containsExactly("pay");
        assertThat(base.decide("o-1", "CREATED", "pay").outcome()).isEqualTo(Outcome.ILLEGAL);
        assertThat(more.events()).containsExactly("pay", "ship");
        assertThat(more.decide("o-1", "CREATED", "pay").outcome()).isEqualTo(Outcome.APPLIED);
        assertThat(more).hasToString("StateMachine[orders(id) status, [NEW, CREATED] --pay--> PAID,"
                + " [PAID] --ship--> SHIPPED]");
    }

    @Test
    void anEventLeadsToOneStateAndNeverFromItsTarget() {
        StateMachine machine = StateMachine.of("orders", "id", "status").allow("NEW", "pay", "PAID");

        assertThatThrownBy(() -> machine.allow("CREATED", "pay", "SETTLED"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Event 'pay' of orders already leads to PAID, not SETTLED: an event has one target state;"
                        + " name the transition to SETTLED differently");
        assertThatThrownBy(() -> machine.allow("PAID", "pay", "PAID"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot lead from PAID to itself");
        assertThatThrownBy(() -> machine.allow(List.of(), "ship", "SHIPPED"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one state");
        assertThatThrownBy(() -> machine.allow("NEW", " ", "PAID")).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"orders; DROP TABLE x", "1orders", "shop.orders.v2", "or-ders", "", " orders",
            "\"orders\"", "orders--", "shop.", "ördere"})
    void aTableThatIsNotAnSqlIdentifierIsRefused(String table) {
        assertThatThrownBy(() -> StateMachine.of(table, "id", "status"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid table name '" + table + "': must be letters, digits and underscores, not starting"
                        + " with a digit, optionally qualified by a schema (such as orders or shop.orders)");
    }

    @Test
    void columnsMustBeUnqualifiedDistinctIdentifiers() {
        assertThat(StateMachine.of("shop.orders_2", "_id", "Status1")).isNotNull();
        assertThatThrownBy(() -> StateMachine.of("orders", "o.id", "status"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid id column 'o.id' for table orders: must be letters, digits and underscores, not"
                        + " starting with a digit, and unqualified (such as order_id)");
        assertThatThrownBy(() -> StateMachine.of("orders", "id", "status = 'PAID' --"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Invalid state column 'status = 'PAID' --' for table orders");
        assertThatThrownBy(() -> StateMachine.of("orders", "id", "ID"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("The state column of table orders is ID, which is already its id column; they must be"
                        + " different columns");
        StateMachine machine = StateMachine.of("orders", "id", "status").allow("NEW", "pay", "PAID");
        assertThatThrownBy(() -> machine.withVersion("status")).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void columnsToSetAreValidatedBeforeAnyStatement(TestDatabase database) throws Exception {
        try (Table table = database.table(COLUMNS); Connection connection = database.connect()) {
            insert(table, "o-1", "NEW");
            StateMachine machine = orders(table).withVersion("version");

            assertThatThrownBy(() -> machine.apply(connection, "o-1", "pay", Map.of("note = 'x', status", "y")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("Invalid column 'note = 'x', status' for table " + table.name());
            assertThatThrownBy(() -> machine.apply(connection, "o-1", "pay", Map.of("VERSION", 7)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("Column VERSION of table " + table.name() + " is set by the guard itself; leave it out"
                            + " of the columns to set");
            assertThat(table.rows("SELECT status, version FROM $T")).containsExactly("NEW 0");
        }
    }
}
