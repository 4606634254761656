package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class OutboxTableTest {

    @ParameterizedTest
    @CsvSource({
            "MariaDB, 10.5.27-MariaDB, 10, 5, false",
            "MariaDB, 10.6.21-MariaDB, 10, 6, true",
            "MariaDB, 10.11.19-MariaDB-0+deb12u1, 10, 11, true",
            "MariaDB, 11.4.5-MariaDB, 11, 4, true",
            // The MariaDB driver reports a MySQL server's name as MySQL.
            "MySQL, 5.7.44, 5, 7, false",
            "MySQL, 8.0.40, 8, 0, true"})
    void mariaDbAndMySqlSkipLockedRowsFromTheVersionsThatCan(String product, String version, int major, int minor,
            boolean skips) throws SQLException {
        OutboxTable table = OutboxTable.of(new MariaDbDialect("keys"));

        assertThat(table.skipsLockedRows(server(product, version, major, minor))).isEqualTo(skips);
        assertThat(table.lockOldest(skips)).endsWith(skips ? "FOR UPDATE SKIP LOCKED" : "FOR UPDATE");
    }

    @Test
    void theOutboxIsNamedAfterTheKeysTable() {
        assertThat(OutboxTable.of(new PostgresDialect("idem_keys")).name).isEqualTo("idem_keys_outbox");
        assertThat(OutboxTable.of(new H2Dialect("k")).lockOldest(true))
                .isEqualTo("SELECT id, namespace, destination, message_id, msg_key, headers, payload, "
                        + "DATEDIFF(MICROSECOND, created_at, CURRENT_TIMESTAMP(6)) FROM k_outbox ORDER BY id LIMIT ? "
                        + "FOR UPDATE SKIP LOCKED");
        assertThat(OutboxTable.of(new H2Dialect("k")).delete()).isEqualTo("DELETE FROM k_outbox WHERE id = ?");
    }

    private static DatabaseMetaData server(String product, String version, int major, int minor) {
        return (DatabaseMetaData) Proxy.newProxyInstance(OutboxTableTest.class.getClassLoader(),
                new Class<?>[] {DatabaseMetaData.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getDatabaseProductName" -> product;
                    case "getDatabaseProductVersion" -> version;
                    case "getDatabaseMajorVersion" -> major;
                    case "getDatabaseMinorVersion" -> minor;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}
