package dev.idem.bench.soak;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The JDBC store's size on PostgreSQL: the keys table's {@code pg_total_relation_size}, its rows (all, and those
 * expired but not purged yet), and from {@code pg_stat_user_tables} its dead row versions, deleted rows and vacuums;
 * the side tables the store creates beside it ({@code <table>_outbox}, {@code _steps}, ...) summed apart. Can also
 * run a plain {@code VACUUM} of those tables at a fixed delay, on a thread of its own, for a server whose
 * autovacuum is off.
 */
final class PostgresGauge implements StoreGauge {

    private final String url;
    private final String user;
    private final String table;
    private final Connection connection;
    private ScheduledExecutorService vacuum;

    PostgresGauge(String url, String user, String table) throws SQLException {
        this.url = url;
        this.user = user;
        this.table = table;
        this.connection = DriverManager.getConnection(url, user, "");
    }

    /** The server's {@code autovacuum} setting, for the report. */
    String autovacuum() throws SQLException {
        try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery("SHOW autovacuum")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** Runs {@code VACUUM} of the store's tables every {@code every}, the first one {@code every} from now. */
    void vacuumEvery(Duration every) {
        vacuum = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "soak-vacuum");
            thread.setDaemon(true);
            return thread;
        });
        vacuum.scheduleWithFixedDelay(this::vacuumNow, every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void vacuumNow() {
        try (Connection c = DriverManager.getConnection(url, user, ""); Statement s = c.createStatement()) {
            s.execute("VACUUM " + String.join(", ", tables()));
        } catch (SQLException e) {
            System.err.println("soak: VACUUM of " + table + " failed: " + e.getMessage());
        }
    }

    /** The keys table and its side tables. */
    List<String> tables() throws SQLException {
        List<String> names = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(url, user, "");
                PreparedStatement s = c.prepareStatement(
                        "SELECT relname FROM pg_stat_user_tables WHERE starts_with(relname, ?) ORDER BY relname")) {
            s.setString(1, table);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    names.add(rs.getString(1));
                }
            }
        }
        return names;
    }

    @Override
    public Sample sample() throws SQLException {
        long bytes = 0;
        long side = 0;
        long dead = -1;
        long removed = -1;
        long vacuums = -1;
        try (PreparedStatement s = connection.prepareStatement("SELECT relname, pg_total_relation_size(relid),"
                + " n_dead_tup, n_tup_del, vacuum_count + autovacuum_count FROM pg_stat_user_tables"
                + " WHERE starts_with(relname, ?)")) {
            s.setString(1, table);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    if (rs.getString(1).equals(table)) {
                        bytes = rs.getLong(2);
                        dead = rs.getLong(3);
                        removed = rs.getLong(4);
                        vacuums = rs.getLong(5);
                    } else {
                        side += rs.getLong(2);
                    }
                }
            }
        }
        try (Statement s = connection.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*), count(*) FILTER (WHERE expires_at < now()) FROM "
                        + table)) {
            rs.next();
            return new Sample(bytes, side, rs.getLong(1), rs.getLong(2), dead, removed, vacuums);
        }
    }

    @Override
    public String describe() {
        return "PostgreSQL " + url + ": size = pg_total_relation_size(" + table + "), side = the same of " + table
                + "_* summed, keys = count(*), expired = of them past expires_at, dead = n_dead_tup, purged ="
                + " n_tup_del, vacuums = vacuum_count + autovacuum_count (pg_stat_user_tables)";
    }

    @Override
    public void close() {
        if (vacuum != null) {
            vacuum.shutdownNow();
        }
        try {
            connection.close();
        } catch (SQLException e) {
            // Closing at the end of the run: nothing left to do with it.
        }
    }
}
