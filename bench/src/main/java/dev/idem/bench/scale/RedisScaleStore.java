package dev.idem.bench.scale;

import dev.idem.runtime.config.KeyDigest;
import dev.idem.spi.DedupStore;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The {@code redis} store under a key prefix of the run's own ({@code idem-scale-<random>:}); its size is the
 * server's {@code used_memory} ({@code INFO memory}), so the server should be otherwise idle. Keys are deleted with
 * {@code DEL}, not {@code UNLINK}, so that their memory is freed before the next baseline is read.
 */
final class RedisScaleStore implements ScaleStore {

    static final String URL = System.getenv().getOrDefault("IDEM_BENCH_REDIS_URL", "redis://127.0.0.1:6379");

    /** {@code -Didem.bench.redis.pack=true}: the store with {@code pack-completed} (filled through the SPI only). */
    static final boolean PACK = Boolean.getBoolean("idem.bench.redis.pack");

    private final String prefix = "idem-scale-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    private final RedisClient client = RedisClient.create(URL);
    private final StatefulRedisConnection<String, String> admin = client.connect();

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public String sizeSource() {
        return "used_memory (INFO memory) of " + URL + ", keys under " + prefix + (PACK ? ", pack-completed" : "");
    }

    /** The completed key {@link #bulkFill} copies the format of, once one is written through the SPI. */
    private Template template;

    @Override
    public DedupStore open() {
        deleteKeys();
        template = null;
        return another();
    }

    @Override
    public DedupStore another() {
        return ScaleStore.create("redis", config -> config.with("uri", URL).with("key-prefix", prefix)
                .with("pack-completed", PACK));
    }

    @Override
    public String storeSection() {
        return "{ type: redis, redis: { uri: \"" + URL + "\", key-prefix: \"" + prefix + "\", pack-completed: " + PACK
                + " } }";
    }

    /**
     * {@code used_memory}, read again until two readings 300 ms apart differ by less than 64 KiB (at most 5 s):
     * Redis grows its key tables by rehashing incrementally, old and new table side by side until it is done.
     */
    @Override
    public long size() throws InterruptedException {
        long last = usedMemory();
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            Thread.sleep(300);
            long now = usedMemory();
            if (Math.abs(now - last) < 64 * 1024) {
                return now;
            }
            last = now;
        }
        return last;
    }

    private long usedMemory() {
        for (String line : admin.sync().info("memory").split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                return Long.parseLong(line.substring("used_memory:".length()).trim());
            }
        }
        throw new IllegalStateException("INFO memory of " + URL + " has no used_memory line");
    }

    /** Keys written through the SPI first, as the template the bulk fill copies the format of. */
    private static final int TEMPLATE_KEYS = 10_000;
    /** Commands sent before their replies are awaited. */
    private static final int PIPELINE = 10_000;

    /** A completed record's length: {@code d}, an 8-byte token, one digit of attempts, {@code #} and 32 bytes. */
    private static final int RECORD_BYTES = 1 + 8 + 1 + 1 + 32;

    /** Whether {@code value} is a completed record of {@link #RECORD_BYTES} (see record.lua in the store). */
    private static boolean completed(byte[] value) {
        return value != null && value.length == RECORD_BYTES && value[0] == 'd' && Character.isDigit(value[9])
                && value[10] == '#';
    }

    /**
     * A completed key as the SPI wrote it: the key's bytes before its ID, its attempts and its time to live.
     */
    private record Template(byte[] keyStart, byte attempts, long ttlMillis) {

        /** The template read from the completed key {@code key}, its ID a UUID, holding {@code value}. */
        static Template of(byte[] key, byte[] value, long ttlMillis) {
            UUID.fromString(new String(key, key.length - 36, 36, StandardCharsets.US_ASCII));
            if (!completed(value)) {
                throw new IllegalStateException("The SPI's completed key " + new String(key, StandardCharsets.UTF_8)
                        + " does not hold d<8-byte token><attempts>#<32 bytes>: the store's record changed, and"
                        + " the bulk fill needs updating");
            }
            return new Template(Arrays.copyOf(key, key.length - 36), value[9], ttlMillis);
        }

        /** The key of a fresh version 4 UUID. */
        byte[] key(ThreadLocalRandom random) {
            String id = Workload.randomUuid(random);
            byte[] key = Arrays.copyOf(keyStart, keyStart.length + 36);
            System.arraycopy(id.getBytes(StandardCharsets.US_ASCII), 0, key, keyStart.length, 36);
            return key;
        }

        /** A completed record with a random token and fingerprint. */
        byte[] value(ThreadLocalRandom random) {
            byte[] value = new byte[RECORD_BYTES];
            random.nextBytes(value);
            value[0] = 'd';
            value[9] = attempts;
            value[10] = '#';
            return value;
        }
    }

    /**
     * {@value #TEMPLATE_KEYS} keys through the SPI after {@link #open}, then the rest written by this client with
     * {@code SET ... PX}, pipelined: each as the SPI leaves a completed key (the template's key up to its ID, then
     * a fresh version 4 UUID; {@code d}, a random 8-byte token, the template's attempts, {@code #} and 32 random
     * bytes, as many as a SHA-256; the template's time to live). Redis keeps no older versions of a value, so the
     * memory is the SPI's: the same count of keys of the same lengths. Checked: each batch's keys all exist once
     * it is written ({@code EXISTS}), and a thousand of them read back in the template's shape at the end (the
     * server's key count is no check: other clients' keys expire meanwhile).
     */
    @Override
    public long bulkFill(DedupStore store, long keys) throws Exception {
        if (Workload.KEY_DIGEST != KeyDigest.NONE) {
            throw new IllegalArgumentException("The bulk fill writes UUID IDs as text: run it without "
                    + "-Didem.bench.key-digest");
        }
        if (PACK) {
            throw new IllegalArgumentException("The bulk fill writes completed keys as strings, not packed: run "
                    + "-Didem.bench.redis.pack=true with -Didem.bench.fill=spi");
        }
        long start = System.nanoTime();
        long left = keys;
        if (template == null && keys > 0) {
            long written = Math.min(keys, TEMPLATE_KEYS);
            ScaleStore.fill(store, written);
            left -= written;
            template = readTemplate();
        }
        if (left == 0) {
            return System.nanoTime() - start;
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        List<byte[]> sample = new ArrayList<>();
        try (StatefulRedisConnection<byte[], byte[]> connection = client.connect(ByteArrayCodec.INSTANCE)) {
            RedisAsyncCommands<byte[], byte[]> redis = connection.async();
            connection.setAutoFlushCommands(false);
            SetArgs ttl = SetArgs.Builder.px(template.ttlMillis());
            long reported = left;
            List<RedisFuture<?>> sent = new ArrayList<>(PIPELINE + 1);
            byte[][] keysSent = new byte[PIPELINE][];
            while (left > 0) {
                int take = (int) Math.min(left, PIPELINE);
                for (int i = 0; i < take; i++) {
                    byte[] key = template.key(random);
                    keysSent[i] = key;
                    sent.add(redis.set(key, template.value(random), ttl));
                    if (sample.size() < 1_000 && random.nextInt(1_000) == 0) {
                        sample.add(key);
                    }
                }
                RedisFuture<Long> present = redis.exists(Arrays.copyOf(keysSent, take));
                sent.add(present);
                connection.flushCommands();
                if (!LettuceFutures.awaitAll(Duration.ofMinutes(1), sent.toArray(new RedisFuture<?>[0]))) {
                    throw new IllegalStateException("Redis did not answer " + take + " SETs within a minute");
                }
                if (present.get() != take) {
                    throw new IllegalStateException("Of " + take + " keys just written, Redis holds " + present.get()
                            + ": keys were evicted");
                }
                sent.clear();
                left -= take;
                if (reported - left >= 1_000_000 || left == 0) {
                    reported = left;
                    System.out.printf("redis: bulk fill, %,d keys to go (%.0f s)%n", left,
                            (System.nanoTime() - start) / 1e9);
                }
            }
            connection.setAutoFlushCommands(true);
            for (byte[] key : sample) {
                byte[] value = connection.sync().get(key);
                long ttlMillis = connection.sync().pttl(key);
                if (!completed(value) || ttlMillis <= 0 || ttlMillis > template.ttlMillis()) {
                    throw new IllegalStateException("The bulk-filled key " + new String(key, StandardCharsets.UTF_8)
                            + " does not hold a completed record in the SPI's shape");
                }
            }
        }
        return System.nanoTime() - start;
    }

    /** A completed key of the fill's namespace that the SPI wrote, as the {@link Template}. */
    private Template readTemplate() {
        RedisCommands<String, String> redis = admin.sync();
        String pattern = prefix + Workload.NAMESPACE.length() + ":" + Workload.NAMESPACE + ":*";
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            KeyScanCursor<String> page = redis.scan(cursor, ScanArgs.Builder.matches(pattern).limit(1_000));
            if (!page.getKeys().isEmpty()) {
                try (StatefulRedisConnection<byte[], byte[]> bytes = client.connect(ByteArrayCodec.INSTANCE)) {
                    byte[] key = page.getKeys().get(0).getBytes(StandardCharsets.UTF_8);
                    return Template.of(key, bytes.sync().get(key), bytes.sync().pttl(key));
                }
            }
            cursor = page;
        } while (!cursor.isFinished());
        throw new IllegalStateException("No key matches " + pattern + " after the SPI's fill: the store's key"
                + " layout changed, and the bulk fill needs updating");
    }

    @Override
    public String bulkFillNote() {
        return "written by the benchmark's client in the SPI's format (SET ... PX, pipelined)";
    }

    @Override
    public void drop() {
        deleteKeys();
    }

    private void deleteKeys() {
        RedisCommands<String, String> redis = admin.sync();
        ScanArgs matching = ScanArgs.Builder.matches(prefix + "*").limit(10_000);
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            KeyScanCursor<String> page = redis.scan(cursor, matching);
            if (!page.getKeys().isEmpty()) {
                redis.del(page.getKeys().toArray(new String[0]));
            }
            cursor = page;
        } while (!cursor.isFinished());
    }

    @Override
    public void close() {
        admin.close();
        client.shutdown();
    }
}
