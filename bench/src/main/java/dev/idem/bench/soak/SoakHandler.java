package dev.idem.bench.soak;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * The soak's handler ({@link Soak}), which the soak packs alone into a JAR in {@code handlers/} of its installation,
 * so {@code bin/idem run} loads it through the real handler loader; it compiles against {@code idem-api} and the JDK
 * alone, and has no nested classes.
 *
 * <p>A run works {@value #WORK_MS_ENV} milliseconds (a sleep; default 0), then, in transactional mode
 * ({@value #TABLE_ENV} set), inserts {@code (n, pid)} into that table on the store's {@link Connection}, {@code n}
 * being the number the message's ID ends with: the effect, which commits with the key or not at all. Last it appends
 * {@code n<TAB>attempt<TAB>pid<TAB>epochMillis} to {@code runs-<pid>.log} in {@value #RUNS_DIR_ENV}: one unbuffered
 * write, which a {@code kill -9} right after it does not lose. In plain mode that line is the effect.
 *
 * <p>Thread-safe: lines are appended under a lock; each run has its own transaction.
 */
public final class SoakHandler implements MessageHandler {

    /** The directory of the runs files, one per process. */
    public static final String RUNS_DIR_ENV = "IDEM_SOAK_RUNS_DIR";
    /** The effects table ({@code n BIGINT, pid BIGINT}) of transactional mode; unset in plain mode. */
    public static final String TABLE_ENV = "IDEM_SOAK_TABLE";
    /** How long a run works, in milliseconds. */
    public static final String WORK_MS_ENV = "IDEM_SOAK_WORK_MS";

    private final String table;
    private final long workMillis;
    private final long pid = ProcessHandle.current().pid();
    private final FileOutputStream runs;

    public SoakHandler() {
        String dir = System.getenv(RUNS_DIR_ENV);
        if (dir == null || dir.isBlank()) {
            throw new IllegalStateException(SoakHandler.class.getName() + " needs the environment variable "
                    + RUNS_DIR_ENV);
        }
        String configured = System.getenv(TABLE_ENV);
        table = configured == null || configured.isBlank() ? null : configured.trim();
        String work = System.getenv(WORK_MS_ENV);
        workMillis = work == null || work.isBlank() ? 0 : Long.parseLong(work.trim());
        Path file = Path.of(dir).resolve("runs-" + pid + ".log");
        try {
            Files.createDirectories(file.getParent());
            runs = new FileOutputStream(file.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the runs file " + file, e);
        }
    }

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException, InterruptedException {
        String id = message.idempotencyKey().orElseThrow();
        long n = Long.parseLong(id.substring(id.lastIndexOf('-') + 1));
        if (workMillis > 0) {
            Thread.sleep(workMillis);
        }
        if (table != null) {
            Connection connection = context.transaction(Connection.class).orElseThrow(() ->
                    new IllegalStateException(TABLE_ENV + " is set but the pipeline is not transactional"));
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO " + table + " (n, pid) VALUES (?, ?)")) {
                insert.setLong(1, n);
                insert.setLong(2, pid);
                insert.executeUpdate();
            }
        }
        record(n + "\t" + message.attempt() + '\t' + pid + '\t' + System.currentTimeMillis() + '\n');
    }

    private synchronized void record(String line) {
        try {
            runs.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the runs file of process " + pid, e);
        }
    }
}
