package dev.idem.bench.scale;

import dev.idem.spi.DedupStore;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.UUID;

/**
 * The {@code redis} store under a key prefix of the run's own ({@code idem-scale-<random>:}); its size is the
 * server's {@code used_memory} ({@code INFO memory}), so the server should be otherwise idle. Keys are deleted with
 * {@code DEL}, not {@code UNLINK}, so that their memory is freed before the next baseline is read.
 */
final class RedisScaleStore implements ScaleStore {

    static final String URL = System.getenv().getOrDefault("IDEM_BENCH_REDIS_URL", "redis://127.0.0.1:6379");

    private final String prefix = "idem-scale-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    private final RedisClient client = RedisClient.create(URL);
    private final StatefulRedisConnection<String, String> admin = client.connect();

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public String sizeSource() {
        return "used_memory (INFO memory) of " + URL + ", keys under " + prefix;
    }

    @Override
    public DedupStore open() {
        deleteKeys();
        return another();
    }

    @Override
    public DedupStore another() {
        return ScaleStore.create("redis", config -> config.with("uri", URL).with("key-prefix", prefix));
    }

    @Override
    public String storeSection() {
        return "{ type: redis, redis: { uri: \"" + URL + "\", key-prefix: \"" + prefix + "\" } }";
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
