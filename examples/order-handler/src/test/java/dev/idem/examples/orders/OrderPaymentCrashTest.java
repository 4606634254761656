package dev.idem.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.handlertest.CrashReport;
import dev.idem.handlertest.CrashTest;
import dev.idem.handlertest.TestMessage;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.store.jdbc.JdbcDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Both handlers through the real pipeline, killed at every point a crash can hit, with duplicates and repeats in the
 * stream (the crash-test kit, idem-handler-test): each order is paid once. The plain handler's ledger shows the
 * re-runs a kill before the key's completion causes, each ignored by the order's state; the transactional handler's
 * payment and the key commit together, so a kill before the commit leaves nothing.
 */
class OrderPaymentCrashTest {

    @TempDir
    Path dir;

    private final List<OrderPaymentHandler> opened = new ArrayList<>();

    @AfterEach
    void closeHandlers() throws IOException {
        for (OrderPaymentHandler handler : opened) {
            handler.close();
        }
    }

    private static List<TestMessage> orders(int count) {
        List<TestMessage> orders = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            orders.add(Orders.paid("m-" + i, "o-" + i, i + ".00"));
        }
        return orders;
    }

    @Test
    void plainHandlerPaysEachOrderOnceWhereverItIsKilled() {
        AtomicReference<Path> ledger = new AtomicReference<>();
        AtomicInteger pass = new AtomicInteger();
        CrashReport report = CrashTest.of(() -> {
                    // A new ledger for each pass of the test, as for a new installation.
                    ledger.set(dir.resolve("pass-" + pass.incrementAndGet()).resolve("order-payments.log"));
                    OrderPaymentHandler handler = new OrderPaymentHandler(ledger.get(), false);
                    opened.add(handler);
                    return handler;
                })
                .observe(messageId -> Map.of("payment", lines(ledger.get(), messageId, "applied")))
                .messages(orders(8))
                .duplicate(0.25)
                .redeliverEach()
                .run();

        report.assertEffectivelyOnce();
        assertThat(report.rows()).extracting(CrashReport.Row::label).contains("before the handler",
                "after the handler, before the key completed");
    }

    @Test
    void transactionalHandlerPaysEachOrderOnceWhereverItIsKilled() {
        String url = "jdbc:h2:async:" + dir.resolve("orders").toAbsolutePath();
        DedupStoreProvider jdbc = new JdbcDedupStoreProvider();

        CrashReport report = CrashTest.of(new TransactionalOrderPaymentHandler(false))
                .pipeline("transactional: true")
                .store(() -> jdbc.create(TestPluginConfig.defaults("store.jdbc", jdbc.configSpec()).with("url", url),
                        new StoreContext(System::nanoTime)))
                .beforeEachPass(() -> {
                    sql(url, "DROP TABLE IF EXISTS payment_events", "DROP TABLE IF EXISTS order_status");
                    sql(url, OrderTables.ddl().toArray(new String[0]));
                })
                .observe(messageId -> Map.of("payment", payments(url, messageId)))
                .messages(orders(3))
                .duplicate(0.5)
                .run();

        report.assertEffectivelyOnce();
        assertThat(report.rows()).extracting(CrashReport.Row::label)
                .contains("inside the transaction, before it committed");
    }

    /** The ledger lines of {@code messageId} with this outcome. */
    private static int lines(Path ledger, String messageId, String outcome) throws IOException {
        if (!Files.exists(ledger)) {
            return 0;
        }
        return (int) new String(Files.readAllBytes(ledger), StandardCharsets.UTF_8).lines()
                .map(line -> line.split("\t", -1))
                .filter(fields -> fields.length == 5 && fields[0].equals(messageId) && fields[4].equals(outcome))
                .count();
    }

    private static int payments(String url, String messageId) throws SQLException {
        try (Connection c = DriverManager.getConnection(url); PreparedStatement count = c.prepareStatement(
                "SELECT COUNT(*) FROM payment_events WHERE message_id = ? AND outcome = 'applied'")) {
            count.setString(1, messageId);
            try (ResultSet rs = count.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
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
}
