package dev.idem.store.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class PostgresReplyStoreTest extends AbstractJdbcReplyTest {

    private static TestDatabase database;

    @BeforeAll
    static void locateDatabase() {
        database = TestDatabase.postgres();
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
}
