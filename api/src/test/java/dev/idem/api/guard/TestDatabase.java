package dev.idem.api.guard;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;

/**
 * The databases the guards are tested on. PostgreSQL and MariaDB are the local servers (or those the
 * environment names); a missing one skips its tests, or fails them with {@code CI=true}, as
 * {@code dev.idem.testkit.ExternalService} does (the testkit depends on this module, so it cannot be used
 * here). H2 runs in memory.
 */
enum TestDatabase {

    POSTGRESQL("PostgreSQL", "IDEM_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test", "postgres",
            "Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
                    + " (database 'test', trust auth for 127.0.0.1), as .ci/run does."),
    MARIADB("MariaDB", "IDEM_TEST_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test", "root",
            "Start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd"
                    + " (database 'test', user root without password), as .ci/run does."),
    // Kept alive for the whole JVM by DB_CLOSE_DELAY; each test has tables of its own.
    H2("H2", null, "jdbc:h2:mem:idem_guard;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000", null, null);

    private final String label;
    private final String envVariable;
    private final String defaultUrl;
    private final String defaultUser;
    private final String howToStart;

    TestDatabase(String label, String envVariable, String defaultUrl, String defaultUser, String howToStart) {
        this.label = label;
        this.envVariable = envVariable;
        this.defaultUrl = defaultUrl;
        this.defaultUser = defaultUser;
        this.howToStart = howToStart;
    }

    /** A new connection in auto-commit mode; aborts (or, with {@code CI=true}, fails) the test when unreachable. */
    Connection connect() throws SQLException {
        String url = url();
        if (url.contains("user=") || defaultUser == null) {
            return DriverManager.getConnection(url);
        }
        return DriverManager.getConnection(url, defaultUser, "");
    }

    /** A fresh, uniquely named table for one test; {@link Table#close()} drops it. */
    Table table(String columns) throws SQLException {
        String name = "guard_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Connection connection = connect(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE " + name + " (" + columns + ")");
        }
        return new Table(this, name);
    }

    @Override
    public String toString() {
        return label;
    }

    private String url() {
        if (envVariable == null) {
            return defaultUrl;
        }
        String configured = System.getenv(envVariable);
        String url = configured != null && !configured.isBlank() ? configured : defaultUrl;
        if (!reachable(url)) {
            String problem = label + " is not reachable at " + url + " (set " + envVariable + " to point elsewhere). "
                    + howToStart;
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                throw new AssertionError(problem + " CI=true requires every service, so this fails instead of"
                        + " skipping.");
            }
            System.err.println("[api guard tests] NOT RUN: " + problem);
            Assumptions.abort("NOT RUN: " + problem);
        }
        return url;
    }

    private static boolean reachable(String url) {
        URI uri = URI.create(url.substring("jdbc:".length()));
        String host = uri.getHost() != null ? uri.getHost() : "127.0.0.1";
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, uri.getPort()), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** A test's table, dropped on close (the servers are shared). */
    record Table(TestDatabase database, String name) implements AutoCloseable {

        void execute(String sql) throws SQLException {
            try (Connection connection = database.connect(); Statement statement = connection.createStatement()) {
                statement.execute(sql.replace("$T", name));
            }
        }

        /** The rows of a query, each as its columns joined by spaces ({@code null} as "null"). */
        List<String> rows(String sql) throws SQLException {
            List<String> rows = new ArrayList<>();
            try (Connection connection = database.connect(); Statement statement = connection.createStatement();
                    ResultSet rs = statement.executeQuery(sql.replace("$T", name))) {
                int columns = rs.getMetaData().getColumnCount();
                while (rs.next()) {
                    List<String> row = new ArrayList<>();
                    for (int i = 1; i <= columns; i++) {
                        row.add(String.valueOf(rs.getObject(i)));
                    }
                    rows.add(String.join(" ", row));
                }
            }
            return rows;
        }

        @Override
        public void close() throws SQLException {
            execute("DROP TABLE IF EXISTS $T");
        }
    }
}
