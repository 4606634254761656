package dev.idem.handlertest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.api.MessageHandler;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.store.jdbc.JdbcDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The same unguarded insert that {@link CrashTestTest} catches in plain mode, in transactional mode on the JDBC store
 * (an H2 file): the insert and the key's completion commit together, so a kill anywhere, before the commit included,
 * leaves one row per order. The rows are observed in the database after each pass, since an insert that rolled back
 * is no effect. The store keeps real time, so each kill waits out a one-second lease.
 */
class TransactionalCrashTest {

    @TempDir
    Path directory;

    @Test
    void transactionalInsertIsEffectivelyOnceAtEveryPointBeforeTheCommitIncluded() throws Exception {
        String url = "jdbc:h2:async:" + directory.resolve("orders").toAbsolutePath();
        DedupStoreProvider provider = new JdbcDedupStoreProvider();
        MessageHandler handler = (message, context) -> {
            Connection tx = context.transaction(Connection.class).orElseThrow();
            try (PreparedStatement insert = tx.prepareStatement("INSERT INTO orders (id, amount) VALUES (?, ?)")) {
                insert.setString(1, message.idempotencyKey().orElseThrow());
                insert.setInt(2, Integer.parseInt(message.payloadAsString()));
                insert.executeUpdate();
            }
        };

        CrashReport report = CrashTest.of(handler)
                .pipeline("transactional: true")
                .store(() -> provider.create(TestPluginConfig.defaults("store.jdbc", provider.configSpec())
                        .with("url", url).with("table", "idem_keys"), new StoreContext(System::nanoTime)))
                .beforeEachPass(() -> sql(url, "DROP TABLE IF EXISTS orders",
                        "CREATE TABLE orders (id VARCHAR(64) NOT NULL, amount INT NOT NULL)"))
                .observe(id -> Map.of("row", rows(url, id)))
                .messages(List.of(TestMessage.of("order-1", "10"), TestMessage.of("order-2", "20"),
                        TestMessage.of("order-3", "30")))
                .duplicate(0.5)
                .run();

        report.assertEffectivelyOnce();
        assertThat(report.rows()).extracting(CrashReport.Row::label).containsExactly("reference (each message once)",
                "stream, no crash", "before the handler", "inside the transaction, before it committed");
        assertThat(report.rows().get(3).crashes()).isEqualTo(3);
        assertThat(report.toString()).contains("transactional mode");
    }

    private static void sql(String url, String... statements) {
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            for (String statement : statements) {
                s.execute(statement);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int rows(String url, String id) throws SQLException {
        try (Connection c = DriverManager.getConnection(url);
                PreparedStatement count = c.prepareStatement("SELECT COUNT(*) FROM orders WHERE id = ?")) {
            count.setString(1, id);
            try (ResultSet rs = count.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
