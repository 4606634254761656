package dev.idem.bench.soak;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * The Redis store's size under the run's key prefix: the server's {@code used_memory} (which counts every client's
 * keys, so the server should be otherwise quiet), the run's keys counted with {@code SCAN}, and the server's
 * {@code expired_keys}: Redis drops an expired key by itself, there is no purge to configure.
 */
final class RedisGauge implements StoreGauge {

    private final String url;
    private final String prefix;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;

    RedisGauge(String url, String prefix) {
        this.url = url;
        this.prefix = prefix;
        this.client = RedisClient.create(url);
        this.connection = client.connect();
    }

    @Override
    public Sample sample() {
        RedisCommands<String, String> redis = connection.sync();
        long keys = 0;
        ScanArgs matching = ScanArgs.Builder.matches(prefix + "*").limit(10_000);
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            KeyScanCursor<String> page = redis.scan(cursor, matching);
            keys += page.getKeys().size();
            cursor = page;
        } while (!cursor.isFinished());
        return new Sample(info(redis, "memory", "used_memory"), -1, keys, -1, -1, info(redis, "stats", "expired_keys"),
                -1);
    }

    private long info(RedisCommands<String, String> redis, String section, String field) {
        for (String line : redis.info(section).split("\r?\n")) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(field.length() + 1).trim());
            }
        }
        throw new IllegalStateException("INFO " + section + " of " + url + " has no " + field + " line");
    }

    @Override
    public String describe() {
        return "Redis " + url + ": size = the server's used_memory, keys = SCAN MATCH " + prefix
                + "*, purged = the server's expired_keys (every client's)";
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
