package dev.idem.examples.orders;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * The ledger file of {@link OrderPaymentHandler}: one line per handler run,
 * {@code messageId<TAB>orderId<TAB>event<TAB>amount<TAB>outcome}, UTF-8, {@code \n}-terminated.
 *
 * <p>Not thread-safe: the handler serialises every call under its lock.
 *
 * <p>Written through a {@link FileOutputStream} in append mode rather than a {@code FileChannel}: the
 * runtime interrupts a handler that overruns its deadline, and an interrupt during a channel write
 * closes the channel for good ({@code ClosedByInterruptException}), which would break every later run.
 * The stream is unbuffered, so each line reaches the operating system in one {@code write} call as it
 * is appended.
 */
final class Ledger implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(Ledger.class.getName());

    private final Path file;
    private final boolean fsync;
    private final FileOutputStream out;
    /** Whether the file may end inside a line (a crash or failed write); the next line then starts on a new one. */
    private boolean torn;

    private Ledger(Path file, boolean fsync, FileOutputStream out, boolean torn) {
        this.file = file;
        this.fsync = fsync;
        this.out = out;
        this.torn = torn;
    }

    /**
     * Opens (creating it and its directories if absent) the ledger for appending.
     *
     * @param fsync whether every line is forced to the disk before {@link #append} returns
     * @param fix what to do when the file cannot be opened, ending the message: how to name another
     * @throws UncheckedIOException naming the file when it cannot be created or read
     */
    static Ledger open(Path file, boolean fsync, String fix) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            boolean torn = endsInsideLine(file);
            return new Ledger(file, fsync, new FileOutputStream(file.toFile(), true), torn);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open the order ledger " + file.toAbsolutePath() + " for appending: "
                    + e + ". " + fix, e);
        }
    }

    /**
     * The orders the ledger shows as paid: those of every well-formed line with outcome {@code applied}.
     * Malformed lines (a line torn by a crash) are skipped and counted in a warning.
     */
    Set<String> paidOrders() {
        Set<String> paid = new HashSet<>();
        int malformed = 0;
        // An InputStreamReader replaces malformed UTF-8 (a torn line may end inside a character) instead of failing.
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(Files.newInputStream(file),
                StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                String[] fields = line.split("\t", -1);
                if (fields.length != 5) {
                    malformed += line.isEmpty() ? 0 : 1;
                } else if (Outcome.APPLIED.label().equals(fields[4])) {
                    paid.add(fields[1]);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the order ledger " + file.toAbsolutePath() + ": " + e, e);
        }
        if (malformed > 0) {
            LOG.log(System.Logger.Level.WARNING, "Skipped {0} malformed line(s) in the order ledger {1}"
                    + " (a run interrupted mid-write leaves one; its message ran again)", malformed, file.toAbsolutePath());
        }
        return paid;
    }

    /** Appends one run's line; returns once it is with the operating system (and on disk with fsync). */
    void append(String messageId, OrderEvent event, Outcome outcome) throws IOException {
        String line = escape(messageId) + '\t' + event.orderId() + '\t' + event.event() + '\t' + event.amount()
                + '\t' + outcome.label() + '\n';
        byte[] bytes = ((torn ? "\n" : "") + line).getBytes(StandardCharsets.UTF_8);
        torn = true;
        out.write(bytes);
        if (fsync) {
            out.getFD().sync();
        }
        torn = false;
    }

    Path file() {
        return file;
    }

    @Override
    public void close() throws IOException {
        out.close();
    }

    /** Keeps a key's tabs, line breaks and backslashes from breaking the line format. */
    static String escape(String value) {
        StringBuilder out = new StringBuilder(value.length());
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\t' -> out.append("\\t");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean endsInsideLine(Path file) throws IOException {
        if (!Files.exists(file) || Files.size(file) == 0) {
            return false;
        }
        try (SeekableByteChannel channel = Files.newByteChannel(file)) {
            ByteBuffer last = ByteBuffer.allocate(1);
            channel.position(channel.size() - 1);
            channel.read(last);
            return last.get(0) != '\n';
        }
    }
}
