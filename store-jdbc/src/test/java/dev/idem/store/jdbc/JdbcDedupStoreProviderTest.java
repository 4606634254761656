package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.testkit.TestPluginConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JdbcDedupStoreProviderTest {

    private static final JdbcDedupStoreProvider PROVIDER = new JdbcDedupStoreProvider();

    @Test
    void providerIsFoundByServiceLoaderWithIdJdbc() {
        List<DedupStoreProvider> found = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.id().equals("jdbc"))
                .toList();

        assertThat(found).singleElement().isInstanceOf(JdbcDedupStoreProvider.class);
    }

    @Test
    void providerDeclaresEachKeyOnceWithDefaultsAndDocs() {
        var spec = PROVIDER.configSpec();

        assertThat(spec.names()).containsExactly("url", "username", "password", "table", "schema",
                "pool.maximum-size", "pool.connection-timeout", "socket-timeout", "purge.interval", "purge.batch-size", "properties");
        assertThat(spec.key("url").isRequired()).isTrue();
        assertThat(spec.key("password").type()).isEqualTo(ConfigKey.Type.SECRET);
        assertThat(spec.key("table").defaultValue()).isEqualTo("idem_keys");
        assertThat(spec.key("schema").allowedValues()).containsExactly("create", "validate", "none");
        assertThat(spec.key("schema").defaultValue()).isEqualTo("create");
        assertThat(spec.key("pool.maximum-size").defaultValue()).isEqualTo(10);
        assertThat(spec.key("purge.interval").defaultValue()).isEqualTo(Duration.ofMinutes(1));
        assertThat(spec.key("purge.batch-size").defaultValue()).isEqualTo(1000);
        assertThat(spec.keys()).allSatisfy(key -> assertThat(key.doc()).isNotBlank());
    }

    @Test
    void urlMustNameASupportedDatabase() {
        assertThatThrownBy(() -> defaults().with("url", "jdbc:oracle:thin:@db:1521/x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value 'jdbc:oracle:thin:@db:1521/x' for store.jdbc.url: must be a JDBC URL "
                        + "starting with jdbc:postgresql:, jdbc:mariadb:, jdbc:mysql: or jdbc:h2:");
    }

    @Test
    void tableMustBeAPlainIdentifier() {
        assertThatThrownBy(() -> defaults().with("table", "keys; DROP TABLE users"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("for store.jdbc.table: must be a plain SQL identifier");
        assertThatThrownBy(() -> defaults().with("table", "1keys")).isInstanceOf(IllegalArgumentException.class);
        assertThat(defaults().with("table", "Idem_Keys_2").get(JdbcDedupStoreProvider.TABLE)).isEqualTo("Idem_Keys_2");
    }

    @Test
    void purgeIntervalIsZeroOrAtLeast100ms() {
        assertThat(defaults().with("purge.interval", "0").get(JdbcDedupStoreProvider.PURGE_INTERVAL)).isZero();
        assertThatThrownBy(() -> defaults().with("purge.interval", "10ms"))
                .hasMessageContaining("must be 0 (never) or at least 100ms");
    }

    @Test
    void dialectFollowsTheUrl() {
        assertThat(Dialect.forUrl("jdbc:postgresql://h/db", "t")).isInstanceOf(PostgresDialect.class);
        assertThat(Dialect.forUrl("jdbc:mariadb://h/db", "t")).isInstanceOf(MariaDbDialect.class);
        assertThat(Dialect.forUrl("JDBC:MySQL://h/db", "t")).isInstanceOf(MariaDbDialect.class);
        assertThat(Dialect.forUrl("jdbc:h2:file:./data/idem", "t")).isInstanceOf(H2Dialect.class);
    }

    @Test
    void mysqlUrlIsPermittedToTheMariaDbDriver() {
        MariaDbDialect dialect = new MariaDbDialect("t");

        assertThat(dialect.driverUrl("jdbc:mysql://h:3306/db")).isEqualTo("jdbc:mysql://h:3306/db?permitMysqlScheme");
        assertThat(dialect.driverUrl("jdbc:mysql://h:3306/db?useSsl=true"))
                .isEqualTo("jdbc:mysql://h:3306/db?useSsl=true&permitMysqlScheme");
        assertThat(dialect.driverUrl("jdbc:mariadb://h:3306/db")).isEqualTo("jdbc:mariadb://h:3306/db");
    }

    /** Regression: with H2's default write delay, kill -9 lost completed keys whose messages were acked. */
    @Test
    void h2FileCommitsReachTheFileBeforeTheyReturnUnlessTheUrlSaysOtherwise() {
        H2Dialect dialect = new H2Dialect("t");

        assertThat(dialect.driverUrl("jdbc:h2:async:./data/idem;AUTO_SERVER=TRUE"))
                .isEqualTo("jdbc:h2:async:./data/idem;AUTO_SERVER=TRUE;WRITE_DELAY=0");
        assertThat(dialect.driverUrl("jdbc:h2:async:./data/idem;write_delay=100"))
                .isEqualTo("jdbc:h2:async:./data/idem;write_delay=100");
        assertThat(dialect.driverUrl("jdbc:h2:mem:test")).isEqualTo("jdbc:h2:mem:test");
    }

    /**
     * Regression: a handler interrupted by its timeout inside H2's file I/O closed H2's {@code FileChannel}, and H2
     * closed the database under every session. A file database is opened through H2's interrupt-safe {@code async:}
     * file system, whichever way the URL names it.
     */
    @Test
    void h2FileDatabasesAreOpenedThroughTheInterruptSafeFileSystem() {
        H2Dialect dialect = new H2Dialect("t");

        assertThat(dialect.driverUrl("jdbc:h2:file:./data/idem;AUTO_SERVER=TRUE"))
                .isEqualTo("jdbc:h2:async:./data/idem;AUTO_SERVER=TRUE;WRITE_DELAY=0");
        assertThat(dialect.driverUrl("jdbc:H2:FILE:/var/idem/keys")).isEqualTo("jdbc:h2:async:/var/idem/keys;WRITE_DELAY=0");
        assertThat(dialect.driverUrl("jdbc:h2:./data/idem")).isEqualTo("jdbc:h2:async:./data/idem;WRITE_DELAY=0");
        assertThat(dialect.driverUrl("jdbc:h2:~/idem;MODE=PostgreSQL"))
                .isEqualTo("jdbc:h2:async:~/idem;MODE=PostgreSQL;WRITE_DELAY=0");
        assertThat(dialect.driverUrl("jdbc:h2:C:/data/idem")).isEqualTo("jdbc:h2:async:C:/data/idem;WRITE_DELAY=0");
        assertThat(dialect.driverUrl("jdbc:h2:tcp://localhost/~/idem"))
                .isEqualTo("jdbc:h2:tcp://localhost/~/idem;WRITE_DELAY=0");
    }

    @Test
    void h2FileSystemsThatAnInterruptBreaksAreRefusedNamingTheFix() {
        for (String url : List.of("jdbc:h2:nio:./data/idem", "jdbc:h2:nioMapped:./data/idem", "jdbc:h2:split:nio:./x")) {
            assertThatThrownBy(() -> defaults().with("url", url))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("Invalid value '" + url + "' for store.jdbc.url: must name an H2 database an"
                            + " interrupt cannot close: jdbc:h2:file:PATH or jdbc:h2:PATH (opened through H2's"
                            + " interrupt-safe async: file system)");
        }
        for (String url : List.of("jdbc:h2:file:./x", "jdbc:h2:./x", "jdbc:h2:async:./x", "jdbc:h2:mem:x",
                "jdbc:h2:tcp://h/x", "jdbc:postgresql://h/db")) {
            assertThat(defaults().with("url", url).get(JdbcDedupStoreProvider.URL)).isEqualTo(url);
        }
    }

    @Test
    void passwordsAreRedactedFromUrls() {
        assertThat(Failures.redact("jdbc:postgresql://h:5432/db?user=u&password=hunter2&ssl=true"))
                .isEqualTo("jdbc:postgresql://h:5432/db?user=u&password=******&ssl=true");
        assertThat(Failures.redact("jdbc:mariadb://u:hunter2@h:3306/db")).isEqualTo("jdbc:mariadb://u:******@h:3306/db");
        assertThat(Failures.redact("jdbc:h2:file:./x;USER=sa;PASSWORD=hunter2")).isEqualTo("jdbc:h2:file:./x;USER=sa;PASSWORD=******");
    }

    @Test
    void unreachableDatabaseIsARetriableStoreErrorNamingTheUrlWithoutPassword() {
        TestPluginConfig config = defaults()
                .with("url", "jdbc:postgresql://127.0.0.1:1/test?password=hunter2")
                .with("password", "hunter3")
                .with("pool.connection-timeout", "500ms");

        assertThatThrownBy(() -> PROVIDER.create(config, StoreContext.system()))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isTrue())
                .hasMessageStartingWith("JDBC dedup store at jdbc:postgresql://127.0.0.1:1/test?password=****** "
                        + "(table idem_keys): connecting failed")
                .hasMessageNotContaining("hunter");
    }

    @Test
    void storeOffersTransactionalMode(@TempDir Path directory) {
        try (var store = PROVIDER.create(defaults().with("url", "jdbc:h2:file:" + directory.resolve("idem")),
                StoreContext.system())) {
            assertThat(store).isInstanceOf(TransactionalDedupStore.class);
            store.checkHealth();
        }
    }

    private static TestPluginConfig defaults() {
        return TestPluginConfig.defaults("store.jdbc", PROVIDER.configSpec());
    }
}
