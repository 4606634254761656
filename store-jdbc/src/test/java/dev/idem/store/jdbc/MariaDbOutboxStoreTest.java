package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class MariaDbOutboxStoreTest extends AbstractJdbcOutboxTest {

    private static TestDatabase database;

    @BeforeAll
    static void locateDatabase() {
        database = TestDatabase.mariadb();
    }

    @AfterAll
    static void dropTables() {
        if (database != null) {
            database.dropTables();
        }
    }

    @Override
    TestDatabase database() {
        return database;
    }

    /** The suite's relays run side by side only where the server skips locked rows (MariaDB 10.6, MySQL 8.0). */
    @Test
    void theServerSkipsLockedRows() throws SQLException {
        boolean skips = database.jdbi().withHandle(handle -> OutboxTable.of(database.dialect)
                .skipsLockedRows(handle.getConnection().getMetaData()));

        assertThat(skips).isTrue();
    }
}
