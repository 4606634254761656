package dev.idem.store.jdbc;

import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** H2 in file mode, as the distribution runs it, its bundled version skipping locked rows; needs no server. */
class H2OutboxStoreTest extends AbstractJdbcOutboxTest {

    @TempDir
    static Path directory;

    private static TestDatabase database;

    @BeforeAll
    static void createDatabase() {
        database = TestDatabase.h2(directory);
    }

    @Override
    TestDatabase database() {
        return database;
    }
}
