package dev.idem.cli.fault;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
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
 * The handler of the fault ITs ({@code ScaleOutIT}, {@code StoreRestartIT}, {@code BrokerConnectionLossIT}), packed
 * by the test into a JAR in {@code handlers/} and loaded by {@code bin/idem run} through the real handler loader; it
 * compiles against {@code idem-api} and the JDK alone.
 *
 * <p>A run first works {@value #WORK_MS_ENV} milliseconds (default 0), so that messages stay in flight when a
 * fault strikes. In transactional mode ({@value #TABLE_ENV} set) it then inserts one row {@code (message_id, pid)}
 * into that table through the store's {@link Connection}: the message's effect, which commits with its claim or not
 * at all. Last, it appends {@code id<TAB>attempt<TAB>pid<TAB>epochMillis} to {@code runs-<pid>.log} in the
 * directory {@value #RUNS_DIR_ENV}, one unbuffered write that survives a {@code kill -9} right after it. In plain
 * mode that line is the effect; in transactional mode it is a run whose row may have rolled back. Each process has
 * its own file, so processes sharing the directory never interleave their lines.
 *
 * <p>Thread-safe: lines are appended under a lock, and each run has its own transaction.
 */
public final class FaultHandler implements MessageHandler {

    /** The directory of the runs files, one per process. */
    public static final String RUNS_DIR_ENV = "IDEM_FAULT_RUNS_DIR";
    /** The business table ({@code message_id VARCHAR, pid BIGINT}) of transactional mode; unset in plain mode. */
    public static final String TABLE_ENV = "IDEM_FAULT_TABLE";
    /** How long a run works, in milliseconds (default 0). */
    public static final String WORK_MS_ENV = "IDEM_FAULT_WORK_MS";

    private final String table;
    private final long workMillis;
    private final long pid = ProcessHandle.current().pid();
    private final FileOutputStream runs;

    public FaultHandler() {
        String dir = System.getenv(RUNS_DIR_ENV);
        if (dir == null || dir.isBlank()) {
            throw new IllegalStateException(FaultHandler.class.getName() + " needs the environment variable "
                    + RUNS_DIR_ENV);
        }
        String configuredTable = System.getenv(TABLE_ENV);
        table = configuredTable == null || configuredTable.isBlank() ? null : configuredTable.trim();
        String work = System.getenv(WORK_MS_ENV);
        workMillis = work == null || work.isBlank() ? 0 : Long.parseLong(work.trim());
        Path file = Path.of(dir).resolve("runs-" + pid + ".log");
        try {
            Files.createDirectories(file.getParent());
            // Unbuffered, append mode: each line reaches the operating system in one write.
            runs = new FileOutputStream(file.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the runs file " + file, e);
        }
    }

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException, InterruptedException {
        String id = message.idempotencyKey()
                .orElseThrow(() -> new NonRetryableException("FaultHandler needs an idempotency key"));
        if (workMillis > 0) {
            Thread.sleep(workMillis);
        }
        if (table != null) {
            Connection connection = context.transaction(Connection.class).orElseThrow(() -> new IllegalStateException(
                    "Pipeline '" + context.pipeline() + "' gives no store transaction, but " + TABLE_ENV
                            + " is set: make it transactional"));
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO " + table + " (message_id, pid) VALUES (?, ?)")) {
                insert.setString(1, id);
                insert.setLong(2, pid);
                insert.executeUpdate();
            }
        }
        record(id + '\t' + message.attempt() + '\t' + pid + '\t' + System.currentTimeMillis() + '\n');
    }

    private synchronized void record(String line) {
        try {
            runs.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the runs file of process " + pid, e);
        }
    }
}
