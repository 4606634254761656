package dev.idem.cli.sequence;

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
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The account handler of {@code SequenceGuardIT}, packed by the test into a JAR in {@code handlers/} and loaded by
 * {@code bin/idem run} through the real handler loader; it compiles against {@code idem-api} and the JDK alone.
 *
 * <p>An event is {@code {"account":"acct-007","seq":12,"amount":4711}} with its number in the header
 * {@value #SEQ_HEADER}. Applying it folds the amount into the account's balance, an order-sensitive fold:
 * {@code balance = (balance * }{@value #FACTOR}{@code  + amount) mod }{@value #MODULUS}, from 0.
 * <ul>
 * <li>Transactional mode ({@value #TRANSACTIONAL_ENV}{@code =true}): through the store's {@link Connection}, inserts
 *     {@code applied(account, seq, message_id, amount, pid)} (primary key {@code (account, seq)}, and a
 *     {@code BIGSERIAL n} that gives the order of application) and folds the amount into
 *     {@code balances(account, balance, last_seq)}; both commit with the key and the watermark, or not at all. A
 *     second application of an {@code (account, seq)} hits the primary key: the handler appends it to
 *     {@code doubles-<pid>.log} (so it is counted even though its transaction rolls back) and fails.</li>
 * <li>Plain mode: appends {@code account<TAB>seq<TAB>amount<TAB>messageId<TAB>pid<TAB>epochMicros} to
 *     {@code applied-<pid>.log}, one unbuffered write that survives a {@code kill -9} right after it. That line is
 *     the application; the test folds the lines.</li>
 * </ul>
 * Files go to the directory {@value #DIR_ENV}, one per process, so processes sharing it never interleave lines.
 * Thread-safe: lines are appended under a lock, and each run has its own transaction.
 */
public final class SequenceHandler implements MessageHandler {

    /** The directory of the {@code applied-<pid>.log} and {@code doubles-<pid>.log} files. */
    public static final String DIR_ENV = "IDEM_SEQ_DIR";
    /** {@code true} for transactional mode (the tables {@code applied} and {@code balances}). */
    public static final String TRANSACTIONAL_ENV = "IDEM_SEQ_TRANSACTIONAL";
    /** The header holding the event's sequence number. */
    public static final String SEQ_HEADER = "event-seq";
    public static final long FACTOR = 31;
    public static final long MODULUS = 1_000_000_007L;

    private static final Pattern ACCOUNT = Pattern.compile("\"account\"\\s*:\\s*\"([^\"]+)\"");
    private static final Pattern AMOUNT = Pattern.compile("\"amount\"\\s*:\\s*(\\d+)");
    /** PostgreSQL's unique_violation. */
    private static final String UNIQUE_VIOLATION = "23505";

    private final boolean transactional;
    private final long pid = ProcessHandle.current().pid();
    private final Path dir;
    private final FileOutputStream applied;
    private FileOutputStream doubles;

    public SequenceHandler() {
        String d = System.getenv(DIR_ENV);
        if (d == null || d.isBlank()) {
            throw new IllegalStateException(SequenceHandler.class.getName() + " needs the environment variable "
                    + DIR_ENV);
        }
        dir = Path.of(d.trim());
        transactional = Boolean.parseBoolean(System.getenv(TRANSACTIONAL_ENV));
        applied = transactional ? null : open("applied-" + pid + ".log");
    }

    /** The fold of one amount into a balance. */
    public static long fold(long balance, long amount) {
        return (balance * FACTOR + amount) % MODULUS;
    }

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException {
        String id = message.idempotencyKey()
                .orElseThrow(() -> new NonRetryableException("SequenceHandler needs an idempotency key"));
        String body = message.payloadAsString();
        String account = group(ACCOUNT, body, "account");
        long amount = Long.parseLong(group(AMOUNT, body, "amount"));
        long seq = Long.parseLong(message.header(SEQ_HEADER)
                .orElseThrow(() -> new NonRetryableException("no " + SEQ_HEADER + " header")).trim());
        if (!transactional) {
            Instant now = Instant.now();
            long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
            append(account + '\t' + seq + '\t' + amount + '\t' + id + '\t' + pid + '\t' + micros + '\n');
            return;
        }
        Connection connection = context.transaction(Connection.class).orElseThrow(() -> new IllegalStateException(
                "Pipeline '" + context.pipeline() + "' gives no store transaction, but " + TRANSACTIONAL_ENV
                        + " is true: make it transactional"));
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO applied (account, seq, message_id, amount, pid) VALUES (?, ?, ?, ?, ?)")) {
            insert.setString(1, account);
            insert.setLong(2, seq);
            insert.setString(3, id);
            insert.setLong(4, amount);
            insert.setLong(5, pid);
            insert.executeUpdate();
        } catch (SQLException e) {
            if (UNIQUE_VIOLATION.equals(e.getSQLState())) {
                appendDouble(account + '\t' + seq + '\t' + id + '\t' + pid + '\t' + System.currentTimeMillis() + '\n');
            }
            throw e;
        }
        try (PreparedStatement upsert = connection.prepareStatement(
                "INSERT INTO balances (account, balance, last_seq) VALUES (?, ?, ?) ON CONFLICT (account) DO UPDATE"
                        + " SET balance = MOD(balances.balance * " + FACTOR + " + EXCLUDED.balance, " + MODULUS
                        + "), last_seq = EXCLUDED.last_seq")) {
            upsert.setString(1, account);
            upsert.setLong(2, fold(0, amount));
            upsert.setLong(3, seq);
            upsert.executeUpdate();
        }
    }

    private static String group(Pattern pattern, String body, String what) {
        Matcher m = pattern.matcher(body);
        if (!m.find()) {
            throw new NonRetryableException("no " + what + " in the payload");
        }
        return m.group(1);
    }

    private FileOutputStream open(String name) {
        Path file = dir.resolve(name);
        try {
            Files.createDirectories(dir);
            // Unbuffered, append mode: each line reaches the operating system in one write.
            return new FileOutputStream(file.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open " + file, e);
        }
    }

    private synchronized void append(String line) {
        try {
            applied.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the applied file of process " + pid, e);
        }
    }

    private synchronized void appendDouble(String line) {
        try {
            if (doubles == null) {
                doubles = open("doubles-" + pid + ".log");
            }
            doubles.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the doubles file of process " + pid, e);
        }
    }
}
