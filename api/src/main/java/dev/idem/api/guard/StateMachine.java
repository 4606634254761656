package dev.idem.api.guard;

import dev.idem.api.RejectedException;
import dev.idem.api.guard.Transition.Outcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * A state-machine guard on a handler's own table: the events an entity accepts, the states each applies in,
 * and the state each leads to; {@link #apply} moves one row with a single conditional {@code UPDATE}.
 *
 * <pre>{@code
 * static final StateMachine ORDERS = StateMachine.of("orders", "id", "status")
 *         .allow(List.of("NEW", "CREATED"), "pay", "PAID")
 *         .allow("PAID", "ship", "SHIPPED");
 *
 * public void handle(Message message, HandlerContext context) throws SQLException {
 *     Connection tx = context.transaction(Connection.class).orElseThrow();
 *     if (ORDERS.require(tx, orderId, "pay").applied()) {
 *         // first payment: do the rest of the work in the same transaction
 *     }                                  // ALREADY: a repeat, nothing to do
 * }
 * }</pre>
 *
 * <p>An event applied to an entity in its target state is {@link Outcome#ALREADY}, so a repeated message
 * changes nothing; one applied in any other state, or to a missing row, is {@link Outcome#ILLEGAL}.
 * {@link #require} (or {@link Transition#orReject()}) turns ILLEGAL into {@link RejectedException}, which the
 * runtime records as the outcome {@code rejected}: acked, counted, not retried (in transactional mode after
 * rolling back the handler's transaction).
 *
 * <p><b>Names.</b> Table and column names are written into the SQL, so they must be plain identifiers
 * (letters, digits, underscores, not starting with a digit; the table may be {@code schema.table}); anything
 * else is refused with {@link IllegalArgumentException}. IDs, states and column values are always bound as
 * parameters. States are strings, kept in a character column.
 *
 * <p><b>Threads.</b> Immutable and thread-safe: declare one as a constant and share it. Every
 * {@code allow}/{@code with...} call returns a new instance. The methods that take a {@link Connection} use
 * it and leave it as it was: they never commit, roll back or close it, so their writes belong to the caller's
 * transaction (in transactional mode, the store's: {@code context.transaction(Connection.class)}).
 */
public final class StateMachine {

    private record Rule(Set<String> from, String to) {
    }

    private final String table;
    private final String idColumn;
    private final String stateColumn;
    /** Incremented by every applied transition when set, so optimistic writers of the row see the change. */
    private final String versionColumn;
    private final Map<String, Rule> rules;
    private final int queryTimeoutSeconds;

    private StateMachine(String table, String idColumn, String stateColumn, String versionColumn,
            Map<String, Rule> rules, int queryTimeoutSeconds) {
        this.table = table;
        this.idColumn = idColumn;
        this.stateColumn = stateColumn;
        this.versionColumn = versionColumn;
        this.rules = rules;
        this.queryTimeoutSeconds = queryTimeoutSeconds;
    }

    /**
     * A state machine with no transitions yet, on {@code table}, whose rows are found by {@code idColumn} and hold
     * their state in {@code stateColumn}.
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if a name is not an SQL identifier, or the two columns are the same
     */
    public static StateMachine of(String table, String idColumn, String stateColumn) {
        Sql.table(table);
        Sql.column(table, "id column", idColumn);
        Sql.column(table, "state column", stateColumn);
        Map<String, String> roles = new LinkedHashMap<>();
        roles.put("id column", idColumn);
        roles.put("state column", stateColumn);
        Sql.distinct(table, roles);
        return new StateMachine(table, idColumn, stateColumn, null, Map.of(), 0);
    }

    /**
     * This state machine plus the transition {@code from --event--> to}.
     *
     * @throws IllegalArgumentException if {@code event} already leads to another state, or {@code from} equals
     *                                  {@code to}
     * @see #allow(Collection, String, String)
     */
    public StateMachine allow(String from, String event, String to) {
        return allow(List.of(Objects.requireNonNull(from, "from")), event, to);
    }

    /**
     * This state machine plus {@code event} leading from each of {@code from} to {@code to}. An event leads to
     * one state: it may be allowed from more states by further calls, but always with the same {@code to}. An
     * entity already in {@code to} is reported {@link Outcome#ALREADY}, so {@code to} is never a from-state.
     *
     * @param from  the states the event applies in; at least one
     * @param event the event's name, as passed to {@link #apply}
     * @param to    the state the event leads to
     * @return a new state machine; this one is unchanged
     * @throws NullPointerException     if an argument or a state is null
     * @throws IllegalArgumentException if a name is blank, {@code from} is empty or contains {@code to}, or
     *                                  {@code event} already leads to another state
     */
    public StateMachine allow(Collection<String> from, String event, String to) {
        Objects.requireNonNull(from, "from");
        requireText("event", event);
        requireText("to", to);
        if (from.isEmpty()) {
            throw new IllegalArgumentException("Event '" + event + "' needs at least one state to apply in");
        }
        Rule existing = rules.get(event);
        if (existing != null && !existing.to().equals(to)) {
            throw new IllegalArgumentException("Event '" + event + "' of " + table + " already leads to "
                    + existing.to() + ", not " + to + ": an event has one target state; name the transition to " + to
                    + " differently");
        }
        Set<String> states = new LinkedHashSet<>(existing == null ? Set.of() : existing.from());
        for (String state : from) {
            requireText("from", state);
            if (state.equals(to)) {
                throw new IllegalArgumentException("Event '" + event + "' of " + table + " cannot lead from " + to
                        + " to itself: an entity already in the target state is reported ALREADY");
            }
            states.add(state);
        }
        Map<String, Rule> next = new LinkedHashMap<>(rules);
        next.put(event, new Rule(Collections.unmodifiableSet(states), to));
        return new StateMachine(table, idColumn, stateColumn, versionColumn, Collections.unmodifiableMap(next),
                queryTimeoutSeconds);
    }

    /**
     * This state machine, also incrementing {@code versionColumn} (a non-null integer) with every applied
     * transition, so that an {@link OptimisticUpdate} on the same rows notices the transition.
     *
     * @throws IllegalArgumentException if the name is not an SQL identifier or is the id or state column
     */
    public StateMachine withVersion(String versionColumn) {
        Sql.column(table, "version column", versionColumn);
        Map<String, String> roles = new LinkedHashMap<>();
        roles.put("id column", idColumn);
        roles.put("state column", stateColumn);
        roles.put("version column", versionColumn);
        Sql.distinct(table, roles);
        return new StateMachine(table, idColumn, stateColumn, versionColumn, rules, queryTimeoutSeconds);
    }

    /**
     * This state machine with a JDBC query timeout on its statements, such as the run's
     * {@code context.remaining()}: rounded up to whole seconds, at least one. Without it, statements have
     * none. Cheap: meant to be called per run.
     */
    public StateMachine withQueryTimeout(Duration timeout) {
        return new StateMachine(table, idColumn, stateColumn, versionColumn, rules, Sql.timeoutSeconds(timeout));
    }

    /** The declared events, in declaration order. */
    public Set<String> events() {
        return rules.keySet();
    }

    /**
     * What {@code event} does to an entity in {@code state}, without a database: for state kept elsewhere (in
     * memory, a file). Table and column names only appear in the reason.
     *
     * @param id    the entity's ID, for the reason
     * @param state its current state, or {@code null} when it does not exist
     * @return {@link Outcome#APPLIED} when {@code state} is a from-state of {@code event} (the caller then makes
     *         the change), {@link Outcome#ALREADY} when it is the target, else {@link Outcome#ILLEGAL}
     * @throws IllegalArgumentException if {@code event} was not declared
     */
    public Transition decide(Object id, String state, String event) {
        Rule rule = rule(event);
        if (state != null && rule.from().contains(state)) {
            return new Transition(Outcome.APPLIED, event, rule.to(), true,
                    Sql.row(table, idColumn, id) + " may move from " + state + " to " + rule.to() + " on event '"
                            + event + "'");
        }
        return settled(id, state, state != null, event, rule);
    }

    /**
     * Applies {@code event} to the row whose id column is {@code id}.
     *
     * @see #apply(Connection, Object, String, Map)
     */
    public Transition apply(Connection connection, Object id, String event) throws SQLException {
        return apply(connection, id, event, Map.of());
    }

    /**
     * Applies {@code event} to the row whose id column is {@code id}, with one
     * {@code UPDATE table SET state = ?, ... WHERE id = ? AND state IN (?, ...)}. When it updates no row, reads
     * the row (locking it, {@code SELECT ... FOR UPDATE}, so it sees the latest committed state as the
     * {@code UPDATE} did, even in a transaction whose snapshot is older) to tell {@link Outcome#ALREADY} from
     * {@link Outcome#ILLEGAL}. That lock, like the {@code UPDATE}'s, lasts until the transaction ends; on
     * MariaDB and MySQL a missing row's read locks the gap where it would be.
     *
     * <p>Concurrent calls for one row are safe: the database serialises the {@code UPDATE}s, so exactly one
     * reports {@link Outcome#APPLIED} and the others {@link Outcome#ALREADY} (at READ COMMITTED, and at
     * MariaDB's default REPEATABLE READ; PostgreSQL at REPEATABLE READ or above fails the others with a
     * serialization error, SQLState 40001, instead).
     *
     * @param connection the transaction to work in; not committed, rolled back or closed
     * @param id         the row's ID, bound with {@code setObject}
     * @param event      a declared event
     * @param alsoSet    further columns set only when the transition is made (such as {@code paid_at}), values
     *                   bound with {@code setObject}; may be empty
     * @return what happened; nothing was written unless it is {@link Outcome#APPLIED}
     * @throws IllegalArgumentException if {@code event} was not declared, or a column to set is not an SQL
     *                                  identifier or is the id, state or version column
     * @throws IllegalStateException    if the {@code UPDATE} matched more than one row (the id column is not
     *                                  unique); the rows were updated, so roll the transaction back
     * @throws SQLException             as the database reports it (a missing table or column, a timeout)
     */
    public Transition apply(Connection connection, Object id, String event, Map<String, ?> alsoSet)
            throws SQLException {
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(id, "id");
        Rule rule = rule(event);
        TreeMap<String, Object> columns = Sql.columns(table, alsoSet, reserved());
        if (update(connection, id, rule, columns)) {
            return new Transition(Outcome.APPLIED, event, rule.to(), true,
                    Sql.row(table, idColumn, id) + " moved to " + rule.to() + " on event '" + event + "'");
        }
        Current current = read(connection, id);
        if (current.exists() && rule.from().contains(current.state())) {
            // Changed into a from-state between the UPDATE and the read; the read locked the row, so this succeeds.
            if (update(connection, id, rule, columns)) {
                return new Transition(Outcome.APPLIED, event, rule.to(), true,
                        Sql.row(table, idColumn, id) + " moved from " + current.state() + " to " + rule.to()
                                + " on event '" + event + "'");
            }
            throw new IllegalStateException(Sql.row(table, idColumn, id) + " is " + current.state() + ", a state"
                    + " event '" + event + "' applies in, yet the UPDATE matched no row; is the transaction's"
                    + " isolation level above READ COMMITTED?");
        }
        return settled(id, current.state(), current.exists(), event, rule);
    }

    /**
     * {@link #apply(Connection, Object, String)}, rejecting an illegal event.
     *
     * @return the transition, {@link Outcome#APPLIED} or {@link Outcome#ALREADY}
     * @throws RejectedException with a reason naming the table, the ID, the current state (or that the row is
     *                           missing), the event and the states it applies in
     */
    public Transition require(Connection connection, Object id, String event) throws SQLException {
        return apply(connection, id, event).orReject();
    }

    /** {@link #apply(Connection, Object, String, Map)}, rejecting an illegal event as {@link #require} does. */
    public Transition require(Connection connection, Object id, String event, Map<String, ?> alsoSet)
            throws SQLException {
        return apply(connection, id, event, alsoSet).orReject();
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder("StateMachine[").append(table).append('(').append(idColumn)
                .append(") ").append(stateColumn);
        rules.forEach((event, rule) -> out.append(", ").append(rule.from()).append(" --").append(event)
                .append("--> ").append(rule.to()));
        return out.append(']').toString();
    }

    private record Current(boolean exists, String state) {
    }

    private Set<String> reserved() {
        Set<String> reserved = new LinkedHashSet<>();
        reserved.add(idColumn.toLowerCase(Locale.ROOT));
        reserved.add(stateColumn.toLowerCase(Locale.ROOT));
        if (versionColumn != null) {
            reserved.add(versionColumn.toLowerCase(Locale.ROOT));
        }
        return reserved;
    }

    private boolean update(Connection connection, Object id, Rule rule, Map<String, Object> columns)
            throws SQLException {
        StringBuilder sql = new StringBuilder("UPDATE ").append(table).append(" SET ").append(stateColumn)
                .append(" = ?");
        columns.keySet().forEach(column -> sql.append(", ").append(column).append(" = ?"));
        if (versionColumn != null) {
            sql.append(", ").append(versionColumn).append(" = ").append(versionColumn).append(" + 1");
        }
        sql.append(" WHERE ").append(idColumn).append(" = ? AND ").append(stateColumn).append(" IN (")
                .append(String.join(", ", Collections.nCopies(rule.from().size(), "?"))).append(')');
        try (PreparedStatement update = connection.prepareStatement(sql.toString())) {
            Sql.timeout(update, queryTimeoutSeconds);
            int index = 1;
            update.setString(index++, rule.to());
            for (Object value : columns.values()) {
                update.setObject(index++, value);
            }
            update.setObject(index++, id);
            for (String from : rule.from()) {
                update.setString(index++, from);
            }
            int rows = update.executeUpdate();
            if (rows > 1) {
                throw new IllegalStateException("Moving " + Sql.row(table, idColumn, id) + " to " + rule.to()
                        + " updated " + rows + " rows: the id column " + idColumn + " must be unique (a primary key)");
            }
            return rows == 1;
        }
    }

    private Current read(Connection connection, Object id) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement("SELECT " + stateColumn + " FROM " + table
                + " WHERE " + idColumn + " = ? FOR UPDATE")) {
            Sql.timeout(select, queryTimeoutSeconds);
            select.setObject(1, id);
            try (ResultSet row = select.executeQuery()) {
                return row.next() ? new Current(true, row.getString(1)) : new Current(false, null);
            }
        }
    }

    /** ALREADY or ILLEGAL, for an entity not in a from-state. */
    private Transition settled(Object id, String state, boolean exists, String event, Rule rule) {
        if (exists && rule.to().equals(state)) {
            return new Transition(Outcome.ALREADY, event, state, true, Sql.row(table, idColumn, id) + " is already "
                    + state + ", the target of event '" + event + "'");
        }
        String applies = "event '" + event + "' applies only in " + rule.from() + " (leading to " + rule.to() + ")";
        String where = !exists ? table + " has no row with " + idColumn + "=" + Sql.literal(id)
                : state == null ? Sql.row(table, idColumn, id) + " has no " + stateColumn + " (NULL)"
                : Sql.row(table, idColumn, id) + " is " + state;
        return new Transition(Outcome.ILLEGAL, event, state, exists, where + ": " + applies);
    }

    private Rule rule(String event) {
        Objects.requireNonNull(event, "event");
        Rule rule = rules.get(event);
        if (rule == null) {
            throw new IllegalArgumentException("Unknown event '" + event + "' for " + table + ": the declared events"
                    + " are " + rules.keySet());
        }
        return rule;
    }

    private static void requireText(String what, String value) {
        Objects.requireNonNull(value, what);
        if (value.isBlank()) {
            throw new IllegalArgumentException("The " + what + " of a transition must not be blank");
        }
    }
}
