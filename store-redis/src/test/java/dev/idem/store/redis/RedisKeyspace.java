package dev.idem.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A test's own view of the keys a store wrote: finds them by glob, moves their time, deletes them. Works on
 * a standalone server and on a cluster (SCAN then visits every node).
 */
final class RedisKeyspace implements AutoCloseable {

    /**
     * Makes {@code ARGV[1]} ms pass for KEYS[1]: lowers its TTL and, for a claim, its lease deadline
     * ({@code ARGV[2]} µs); a bucket of packed completions also has each field's expiry lowered; another key that is
     * not a string (a steps hash) only has its TTL lowered. A TTL that runs out deletes the key, as expiry would.
     */
    private static final String ADVANCE = """
            local ttl = redis.call('PTTL', KEYS[1])
            if ttl < 0 then return 0 end
            local left = ttl - tonumber(ARGV[1])
            if left <= 0 then redis.call('DEL', KEYS[1]) return 1 end
            if redis.call('TYPE', KEYS[1]).ok ~= 'string' then
              if string.find(KEYS[1], 'p:{', 1, true) then
                local all = redis.call('HGETALL', KEYS[1])
                for i = 1, #all, 2 do
                  local value = all[i + 1]
                  local expires = struct.unpack('>I6', value, 9) - tonumber(ARGV[1])
                  redis.call('HSET', KEYS[1], all[i],
                      string.sub(value, 1, 8) .. struct.pack('>I6', math.max(0, expires)) .. string.sub(value, 15))
                end
              end
              redis.call('PEXPIRE', KEYS[1], string.format('%d', left))
              return 1
            end
            local value = redis.call('GET', KEYS[1])
            local head, lease_until, tail = string.match(value, '^(C|%d+|%d+|)(%d+)(|.*)$')
            if head then
              local moved = math.max(0, tonumber(lease_until) - tonumber(ARGV[2]))
              value = head .. string.format('%d', moved) .. tail
            end
            redis.call('SET', KEYS[1], value, 'PX', string.format('%d', left))
            return 1
            """;

    private final AbstractRedisClient client;
    private final StatefulConnection<byte[], byte[]> connection;
    private final RedisClusterCommands<byte[], byte[]> redis;

    private RedisKeyspace(AbstractRedisClient client, StatefulConnection<byte[], byte[]> connection,
            RedisClusterCommands<byte[], byte[]> redis) {
        this.client = client;
        this.connection = connection;
        this.redis = redis;
    }

    static RedisKeyspace standalone(String url) {
        RedisClient client = RedisClient.create(url);
        StatefulRedisConnection<byte[], byte[]> connection = client.connect(ByteArrayCodec.INSTANCE);
        return new RedisKeyspace(client, connection, connection.sync());
    }

    static RedisKeyspace cluster(String url) {
        RedisClusterClient client = RedisClusterClient.create(url);
        StatefulRedisClusterConnection<byte[], byte[]> connection = client.connect(ByteArrayCodec.INSTANCE);
        return new RedisKeyspace(client, connection, connection.sync());
    }

    /** The commands, for assertions on what a store wrote. */
    RedisClusterCommands<byte[], byte[]> redis() {
        return redis;
    }

    /** Every key under {@code prefix} whose namespace starts with {@code namespace}. */
    static String glob(String prefix, String namespace) {
        return escape(prefix) + "*:" + escape(namespace) + "*";
    }

    /** Every key starting with {@code prefix}. */
    static String glob(String prefix) {
        return escape(prefix) + "*";
    }

    List<byte[]> keys(String glob) {
        List<byte[]> keys = new ArrayList<>();
        ScanIterator<byte[]> scan = ScanIterator.scan(redis,
                ScanArgs.Builder.matches(glob.getBytes(StandardCharsets.UTF_8)).limit(1000));
        scan.forEachRemaining(keys::add);
        return keys;
    }

    /** Makes {@code duration} pass for every key matching {@code glob}, as the store's server clock sees it. */
    void advance(String glob, Duration duration) {
        byte[] millis = Long.toString(duration.toMillis()).getBytes(StandardCharsets.US_ASCII);
        byte[] micros = Long.toString(duration.toNanos() / 1000).getBytes(StandardCharsets.US_ASCII);
        for (byte[] key : keys(glob)) {
            redis.eval(ADVANCE, ScriptOutputType.INTEGER, new byte[][] {key}, millis, micros);
        }
    }

    /** Deletes every key matching {@code glob}; returns how many there were. */
    int deleteAll(String glob) {
        List<byte[]> keys = keys(glob);
        for (byte[] key : keys) {
            redis.del(key);
        }
        return keys.size();
    }

    private static String escape(String text) {
        return text.replaceAll("([\\\\*?\\[\\]])", "\\\\$1");
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
