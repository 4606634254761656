package dev.idem.bench.soak;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads the runs files {@link SoakHandler} writes ({@code runs-<pid>.log}, one line per handler run) as they grow:
 * how often each {@code n} ran, the runs per time bucket, the end-to-end latency of each run (its time minus the time
 * its ID was first sent, {@link SoakStream#sentAt}) as a histogram per bucket, and each process's first run.
 *
 * <p>Thread-safe: {@link #poll()} and the readings are synchronized.
 */
final class RunsTail {

    /** Latencies are counted per millisecond up to this; longer ones in the last slot. */
    private static final int MAX_MILLIS = 120_000;

    private final Path dir;
    private final SoakStream stream;
    private final long startMillis;
    private final long bucketMillis;
    private final Map<Path, Long> offsets = new HashMap<>();
    private final Map<Path, byte[]> partial = new HashMap<>();
    private final Map<Long, Long> firstRunByPid = new HashMap<>();
    private final TreeMap<Integer, int[]> latencyByBucket = new TreeMap<>();
    private final TreeMap<Integer, Long> runsByBucket = new TreeMap<>();
    private final TreeMap<Integer, Long> maxLatencyByBucket = new TreeMap<>();
    private byte[] runsOfN = new byte[1 << 20];
    private long lines;
    private long distinct;

    /**
     * @param startMillis the epoch milliseconds bucket 0 starts at
     * @param bucketMillis a bucket's length
     */
    RunsTail(Path dir, SoakStream stream, long startMillis, long bucketMillis) {
        this.dir = dir;
        this.stream = stream;
        this.startMillis = startMillis;
        this.bucketMillis = bucketMillis;
    }

    /** Reads what the files gained since the last call. */
    synchronized void poll() {
        if (!Files.isDirectory(dir)) {
            return;
        }
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> listing = Files.newDirectoryStream(dir, "runs-*.log")) {
            listing.forEach(files::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (Path file : files) {
            read(file);
        }
    }

    private void read(Path file) {
        long offset = offsets.getOrDefault(file, 0L);
        byte[] bytes;
        try (RandomAccessFile in = new RandomAccessFile(file.toFile(), "r")) {
            long length = in.length();
            if (length <= offset) {
                return;
            }
            bytes = new byte[(int) Math.min(length - offset, 64L << 20)];
            in.seek(offset);
            in.readFully(bytes);
        } catch (NoSuchFileException e) {
            return;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        offsets.put(file, offset + bytes.length);
        byte[] before = partial.remove(file);
        if (before != null) {
            byte[] joined = Arrays.copyOf(before, before.length + bytes.length);
            System.arraycopy(bytes, 0, joined, before.length, bytes.length);
            bytes = joined;
        }
        int lineStart = 0;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == '\n') {
                line(new String(bytes, lineStart, i - lineStart, StandardCharsets.UTF_8));
                lineStart = i + 1;
            }
        }
        if (lineStart < bytes.length) {
            partial.put(file, Arrays.copyOfRange(bytes, lineStart, bytes.length));
        }
    }

    /** {@code n<TAB>attempt<TAB>pid<TAB>epochMillis}. */
    private void line(String line) {
        String[] f = line.split("\t");
        if (f.length != 4) {
            return;
        }
        long n = Long.parseLong(f[0]);
        long pid = Long.parseLong(f[2]);
        long at = Long.parseLong(f[3]);
        lines++;
        if (n >= runsOfN.length) {
            int grown = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(n + 1, runsOfN.length * 2L));
            runsOfN = Arrays.copyOf(runsOfN, grown);
        }
        if (runsOfN[(int) n] == 0) {
            distinct++;
        }
        if (runsOfN[(int) n] < Byte.MAX_VALUE) {
            runsOfN[(int) n]++;
        }
        firstRunByPid.merge(pid, at, Math::min);
        int bucket = (int) Math.max(0, (at - startMillis) / bucketMillis);
        runsByBucket.merge(bucket, 1L, Long::sum);
        long sent = stream.sentAt(n);
        if (sent > 0) {
            long latency = Math.max(0, at - sent);
            int[] histogram = latencyByBucket.computeIfAbsent(bucket, b -> new int[MAX_MILLIS + 1]);
            histogram[(int) Math.min(latency, MAX_MILLIS)]++;
            maxLatencyByBucket.merge(bucket, latency, Math::max);
        }
    }

    /** Handler runs read so far. */
    synchronized long runs() {
        return lines;
    }

    /** IDs that ran at least once. */
    synchronized long distinct() {
        return distinct;
    }

    /** Runs beyond the first of each ID. */
    synchronized long reruns() {
        return lines - distinct;
    }

    /** The IDs among 1 to {@code highest} that never ran. */
    synchronized long neverRan(long highest) {
        long missing = 0;
        for (long n = 1; n <= highest; n++) {
            if (n >= runsOfN.length || runsOfN[(int) n] == 0) {
                missing++;
            }
        }
        return missing;
    }

    /** The first run (epoch milliseconds) of process {@code pid}, or 0 if it has run nothing yet. */
    synchronized long firstRunOf(long pid) {
        return firstRunByPid.getOrDefault(pid, 0L);
    }

    /** Runs whose time falls in {@code bucket}. */
    synchronized long runsIn(int bucket) {
        return runsByBucket.getOrDefault(bucket, 0L);
    }

    /** The {@code p}-th percentile (0 to 100) of the latencies of {@code bucket}'s runs, in ms; -1 if none. */
    synchronized long percentile(int bucket, double p) {
        int[] histogram = latencyByBucket.get(bucket);
        if (histogram == null) {
            return -1;
        }
        long total = 0;
        for (int c : histogram) {
            total += c;
        }
        long rank = (long) Math.ceil(p / 100 * total);
        long seen = 0;
        for (int ms = 0; ms < histogram.length; ms++) {
            seen += histogram[ms];
            if (seen >= Math.max(1, rank)) {
                return ms;
            }
        }
        return MAX_MILLIS;
    }

    /** The longest latency of {@code bucket}'s runs, in ms; -1 if none. */
    synchronized long max(int bucket) {
        return maxLatencyByBucket.getOrDefault(bucket, -1L);
    }
}
