package dev.idem.store.jdbc;

import dev.idem.testkit.ExternalService;
import dev.idem.testkit.TestPluginConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;
import org.testcontainers.mariadb.MariaDBContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * A database a test class runs against, found once per class: PostgreSQL and MariaDB through
 * {@link ExternalService} (a local server, else a container, else the class does not run), H2 as a
 * file in a temporary directory. Each instance hands out tables with a random suffix and drops them
 * all in {@link #dropTables()}, so test classes sharing a server do not see each other's rows.
 */
final class TestDatabase {

    private static final String POSTGRES_HINT = "Start it with: pg_ctlcluster --skip-systemctl-redirect "
            + "$(ls /etc/postgresql) main start (database 'test', trust auth for 127.0.0.1), as .ci/run does.";
    private static final String MARIADB_HINT = "Start it with: start-stop-daemon --start --oknodo --background "
            + "--exec /usr/sbin/mariadbd (database 'test', user root without password), as .ci/run does.";

    final String url;
    final String username;
    final Dialect dialect;
    final String table;
    private final List<String> tables = new ArrayList<>();

    private TestDatabase(String url, String username) {
        this.url = url;
        this.username = username;
        this.table = newTable("idem_test");
        this.dialect = Dialect.forUrl(url, table);
    }

    static TestDatabase postgres() {
        String url = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", POSTGRES_HINT, Containers::postgres);
        return new TestDatabase(url, url.contains("user=") ? null : "postgres");
    }

    static TestDatabase mariadb() {
        String url = ExternalService.locate("MariaDB", "IDEM_TEST_MARIADB_URL",
                "jdbc:mariadb://127.0.0.1:3306/test", MARIADB_HINT, Containers::mariadb);
        return new TestDatabase(url, url.contains("user=") ? null : "root");
    }

    static TestDatabase h2(Path directory) {
        return new TestDatabase("jdbc:h2:file:" + directory.resolve("idem").toAbsolutePath(), null);
    }

    /** A fresh table name, dropped by {@link #dropTables()}. */
    String newTable(String prefix) {
        String name = prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        tables.add(name.toLowerCase(Locale.ROOT));
        return name;
    }

    /** The store's configuration for {@code table}, with purging left to the tests. */
    TestPluginConfig config(String table) {
        JdbcDedupStoreProvider provider = new JdbcDedupStoreProvider();
        TestPluginConfig config = TestPluginConfig.defaults("store.jdbc", provider.configSpec())
                .with("url", url)
                .with("table", table)
                .with("pool.maximum-size", 8)
                .with("purge.interval", "0");
        return username == null ? config : config.with("username", username);
    }

    TestPluginConfig config() {
        return config(table);
    }

    /** A Jdbi on its own connections, for what the tests do behind the store's back. */
    Jdbi jdbi() {
        return username == null ? Jdbi.create(dialect.driverUrl(url)) : Jdbi.create(dialect.driverUrl(url), username, "");
    }

    void dropTables() {
        Jdbi jdbi = jdbi();
        for (String name : tables) {
            jdbi.useHandle(handle -> handle.execute("DROP TABLE IF EXISTS " + name));
            // The outbox beside each keys table a store made (OutboxTable).
            jdbi.useHandle(handle -> handle.execute("DROP TABLE IF EXISTS " + name + OutboxTable.SUFFIX));
            // And the sequence watermarks (WatermarkTable).
            jdbi.useHandle(handle -> handle.execute("DROP TABLE IF EXISTS " + name + WatermarkTable.SUFFIX));
            // And the durable steps (StepTable).
            jdbi.useHandle(handle -> handle.execute("DROP TABLE IF EXISTS " + name + StepTable.SUFFIX));
            // And the replies (ReplyTable).
            jdbi.useHandle(handle -> handle.execute("DROP TABLE IF EXISTS " + name + ReplyTable.SUFFIX));
        }
    }

    /** Containers for machines without the local servers; started at most once per JVM. */
    private static final class Containers {

        static String postgres() {
            return Postgres.URL;
        }

        static String mariadb() {
            return MariaDb.URL;
        }

        private static final class Postgres {
            static final String URL = start();

            @SuppressWarnings("resource")
            private static String start() {
                PostgreSQLContainer container = new PostgreSQLContainer("postgres:15-alpine").withDatabaseName("test");
                container.start();
                return withParameters(container.getJdbcUrl(), container.getUsername(), container.getPassword());
            }
        }

        private static final class MariaDb {
            static final String URL = start();

            @SuppressWarnings("resource")
            private static String start() {
                MariaDBContainer container = new MariaDBContainer("mariadb:10.11").withDatabaseName("test");
                container.start();
                return withParameters(container.getJdbcUrl(), container.getUsername(), container.getPassword());
            }
        }

        private static String withParameters(String url, String user, String password) {
            return url + (url.contains("?") ? "&" : "?") + "user=" + user + "&password=" + password;
        }
    }
}
