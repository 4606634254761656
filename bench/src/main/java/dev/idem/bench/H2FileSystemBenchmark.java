package dev.idem.bench;

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
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What H2's interrupt-safe {@code async:} file system, through which the JDBC store opens every H2 file, costs
 * against H2's default {@code file:}, on the same H2, the same table shape as the store's keys table and
 * {@code WRITE_DELAY=0} as the store sets it: each operation writes {@code batch} new keys and commits (the claim's
 * and the completion's shape: one commit reaching the file per batch), or reads {@code batch} keys back by primary
 * key from a table of 200,000 keys opened afresh, so that the reads go to the file rather than H2's cache.
 * Read the {@code :keys} lines: keys per second.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar H2FileSystemBenchmark -f 1 -wi 2 -i 5 -w 2 -r 3}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 3)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class H2FileSystemBenchmark {

    private static final int READ_KEYS = 200_000;

    @Param({"file", "async"})
    String fileSystem;

    @Param({"1", "100"})
    int batch;

    private Path directory;
    private Connection connection;
    private PreparedStatement insert;
    private PreparedStatement read;
    private long next;
    private long readNext;

    @Setup(Level.Trial)
    public void open() throws SQLException, IOException {
        directory = Files.createTempDirectory("idem-bench-h2fs");
        String url = "jdbc:h2:" + fileSystem + ":" + directory.resolve("idem").toAbsolutePath()
                + ";WRITE_DELAY=0;CACHE_SIZE=1024";
        connection = DriverManager.getConnection(url);
        try (Statement ddl = connection.createStatement()) {
            ddl.execute("CREATE TABLE keys (namespace VARBINARY(64) NOT NULL, id VARBINARY(512) NOT NULL,"
                    + " state SMALLINT NOT NULL, token BIGINT NOT NULL, attempts INTEGER NOT NULL, fingerprint VARBINARY,"
                    + " lease_until TIMESTAMP(6) WITH TIME ZONE, expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL,"
                    + " PRIMARY KEY (namespace, id))");
            ddl.execute("CREATE INDEX keys_expires_at ON keys (expires_at)");
        }
        insert = connection.prepareStatement("INSERT INTO keys VALUES (?, ?, 2, ?, 1, ?, NULL,"
                + " DATEADD(SECOND, 600, CURRENT_TIMESTAMP(6)))");
        connection.setAutoCommit(false);
        for (int i = 0; i < READ_KEYS; i++) {
            bind(insert, "r", i);
            insert.addBatch();
            if (i % 1000 == 999) {
                insert.executeBatch();
                connection.commit();
            }
        }
        connection.close();
        // Reopened with a small cache, so that reads of the keys written above go to the file.
        connection = DriverManager.getConnection(url);
        connection.setAutoCommit(false);
        insert = connection.prepareStatement("INSERT INTO keys VALUES (?, ?, 2, ?, 1, ?, NULL,"
                + " DATEADD(SECOND, 600, CURRENT_TIMESTAMP(6)))");
        read = connection.prepareStatement("SELECT state FROM keys WHERE namespace = ? AND id = ?");
    }

    @TearDown(Level.Trial)
    public void close() throws SQLException, IOException {
        connection.close();
        try (var files = Files.list(directory)) {
            for (Path file : files.toList()) {
                Files.delete(file);
            }
        }
        Files.delete(directory);
    }

    /** {@code batch} new keys written and committed. */
    @Benchmark
    public void writeAndCommit(Keys keys) throws SQLException {
        for (int i = 0; i < batch; i++) {
            bind(insert, "w", next++);
            insert.addBatch();
        }
        insert.executeBatch();
        connection.commit();
        keys.keys += batch;
    }

    /** {@code batch} keys read by primary key, spread over the table so that most miss the cache. */
    @Benchmark
    public int readByKey(Keys keys) throws SQLException {
        int found = 0;
        for (int i = 0; i < batch; i++) {
            readNext = (readNext + 7_919) % READ_KEYS;
            read.setBytes(1, "r".getBytes(StandardCharsets.UTF_8));
            read.setBytes(2, ("key-" + readNext).getBytes(StandardCharsets.UTF_8));
            try (ResultSet rs = read.executeQuery()) {
                found += rs.next() ? 1 : 0;
            }
        }
        connection.commit();
        keys.keys += batch;
        return found;
    }

    private static void bind(PreparedStatement insert, String namespace, long i) throws SQLException {
        insert.setBytes(1, namespace.getBytes(StandardCharsets.UTF_8));
        insert.setBytes(2, ("key-" + i).getBytes(StandardCharsets.UTF_8));
        insert.setLong(3, i);
        insert.setBytes(4, ("sha256:fingerprint-of-key-" + i).getBytes(StandardCharsets.UTF_8));
    }
}
