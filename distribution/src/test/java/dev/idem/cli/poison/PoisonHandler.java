package dev.idem.cli.poison;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The handler of {@code PoisonIT}, packed by the test into a JAR in {@code handlers/} and loaded by
 * {@code bin/idem run} through the real handler loader; it compiles against {@code idem-api} and the JDK alone.
 *
 * <p>Every run first appends {@code id<TAB>attempt<TAB>pid} to the runs file ({@value #RUNS_ENV}), one unbuffered
 * write, so the line survives the halt that may follow. In transactional mode ({@value #TRANSACTIONAL_ENV}
 * {@code true}) it then inserts one row into {@value #TABLE} through the store's {@link Connection}, the
 * message's business effect. A message whose idempotency key is listed in {@value #POISON_IDS_ENV} then halts
 * the JVM with {@value #HALT_STATUS}, after its row was written, so only a rollback can keep that row out.
 * Any other message sleeps {@value #WORK_MS_ENV} milliseconds, so that messages stay in flight beside a poison.
 *
 * <p>Thread-safe: lines are appended under a lock, each run has its own transaction.
 */
public final class PoisonHandler implements MessageHandler {

    /** The exit status of a JVM the handler halted. */
    public static final int HALT_STATUS = 77;
    /** Comma-separated idempotency keys of the poison messages. */
    public static final String POISON_IDS_ENV = "IDEM_POISON_IDS";
    /** The file every run appends its line to. */
    public static final String RUNS_ENV = "IDEM_POISON_RUNS";
    /** {@code true}: the pipeline is transactional, and each run inserts its row through the store's transaction. */
    public static final String TRANSACTIONAL_ENV = "IDEM_POISON_TRANSACTIONAL";
    /** How long an innocent run works, in milliseconds (default 0). */
    public static final String WORK_MS_ENV = "IDEM_POISON_WORK_MS";
    /** The business table: {@code message_id VARCHAR, pid BIGINT, attempt INT}, created by the test. */
    public static final String TABLE = "poison_effects";

    private final Set<String> poison;
    private final boolean transactional;
    private final long workMillis;
    private final long pid = ProcessHandle.current().pid();
    private final FileOutputStream runs;

    public PoisonHandler() {
        poison = Arrays.stream(required(POISON_IDS_ENV).split(",")).map(String::trim).filter(s -> !s.isEmpty())
                .collect(Collectors.toUnmodifiableSet());
        transactional = Boolean.parseBoolean(System.getenv(TRANSACTIONAL_ENV));
        String work = System.getenv(WORK_MS_ENV);
        workMillis = work == null || work.isBlank() ? 0 : Long.parseLong(work.trim());
        try {
            // Unbuffered, append mode: each line reaches the operating system in one write, before any halt.
            runs = new FileOutputStream(required(RUNS_ENV), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the runs file " + System.getenv(RUNS_ENV), e);
        }
    }

    private static String required(String name) {
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException(PoisonHandler.class.getName() + " needs the environment variable " + name);
        }
        return value;
    }

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException, InterruptedException {
        String id = message.idempotencyKey()
                .orElseThrow(() -> new NonRetryableException("PoisonHandler needs an idempotency key"));
        record(id + '\t' + message.attempt() + '\t' + pid + '\n');
        if (transactional) {
            Optional<Connection> tx = context.transaction(Connection.class);
            Connection connection = tx.orElseThrow(() -> new IllegalStateException(
                    "Pipeline '" + context.pipeline() + "' gives no store transaction; it must be transactional"));
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO " + TABLE + " (message_id, pid, attempt) VALUES (?, ?, ?)")) {
                insert.setString(1, id);
                insert.setLong(2, pid);
                insert.setInt(3, message.attempt());
                insert.executeUpdate();
            }
        }
        if (poison.contains(id)) {
            Runtime.getRuntime().halt(HALT_STATUS);
        }
        if (workMillis > 0) {
            Thread.sleep(workMillis);
        }
    }

    private synchronized void record(String line) {
        try {
            runs.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the runs file " + System.getenv(RUNS_ENV), e);
        }
    }
}
