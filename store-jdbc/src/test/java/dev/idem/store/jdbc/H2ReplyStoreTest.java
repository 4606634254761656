package dev.idem.store.jdbc;

import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** H2 in file mode, as the distribution runs it; always runs, needing no server. */
class H2ReplyStoreTest extends AbstractJdbcReplyTest {

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
