package dev.idem.cli.outbox;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One process's append-only record of handler runs, {@code <dir>/<prefix>-<pid>.log}: one line per call of
 * {@link #append}, written unbuffered in one write, so a line survives a {@code kill -9} right after it and
 * processes sharing the directory never interleave. Thread-safe.
 */
final class RunLog {

    private final FileOutputStream out;
    private final long pid = ProcessHandle.current().pid();

    RunLog(String dirEnv, String prefix) {
        String dir = System.getenv(dirEnv);
        if (dir == null || dir.isBlank()) {
            throw new IllegalStateException("The outbox test handlers need the environment variable " + dirEnv);
        }
        Path file = Path.of(dir.trim()).resolve(prefix + "-" + pid + ".log");
        try {
            Files.createDirectories(file.getParent());
            out = new FileOutputStream(file.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open " + file, e);
        }
    }

    long pid() {
        return pid;
    }

    /**
     * Appends one line: {@code fields}, this process's pid and the time in epoch milliseconds, joined by tabs. With
     * two fields (an ID and the attempt) that is the line {@code FaultHistory} reads.
     */
    synchronized void append(String... fields) {
        StringBuilder line = new StringBuilder();
        for (String f : fields) {
            line.append(f).append('\t');
        }
        line.append(pid).append('\t').append(System.currentTimeMillis()).append('\n');
        try {
            out.write(line.toString().getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot append to the run log of process " + pid, e);
        }
    }

    /** The value of {@code "field":"..."} in a flat JSON payload. */
    static String jsonField(byte[] payload, String field) {
        String text = new String(payload, StandardCharsets.UTF_8);
        String quoted = "\"" + field + "\"";
        int at = text.indexOf(quoted);
        int colon = at < 0 ? -1 : text.indexOf(':', at + quoted.length());
        int open = colon < 0 ? -1 : text.indexOf('"', colon + 1);
        int close = open < 0 ? -1 : text.indexOf('"', open + 1);
        if (close < 0) {
            throw new IllegalArgumentException("No string field '" + field + "' in " + text);
        }
        return text.substring(open + 1, close);
    }

    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value.trim();
    }
}
