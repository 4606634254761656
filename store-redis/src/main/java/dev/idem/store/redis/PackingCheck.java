package dev.idem.store.redis;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warns at start, with {@code pack-completed}, when a Redis server keeps a hash as one listpack only below what a
 * bucket of packed completions needs: {@value #ENTRIES} fields ({@code hash-max-listpack-entries}) of
 * {@value #VALUE} bytes ({@code hash-max-listpack-value}), Redis's defaults. Below them Redis keeps buckets as hash
 * tables: the answers stay right, but a packed key then costs about what a key of its own does, and the setting was
 * turned on to save that.
 *
 * <p>It reads {@code CONFIG GET hash-max-*} of the server, or of each master in Cluster mode, by the settings' names
 * before Redis 7 ({@code hash-max-ziplist-*}, which Redis 7 keeps as aliases) or since; a server that refuses
 * {@code CONFIG} (managed services often do) is not checked, and that is logged at DEBUG. It never fails the start.
 */
final class PackingCheck {

    static final int ENTRIES = 128;
    static final int VALUE = 64;

    private static final Logger LOG = LoggerFactory.getLogger(PackingCheck.class);

    private PackingCheck() {
    }

    /** Logs a warning for each server whose hashes would not stay listpacks, and answers the warnings. */
    static List<String> warn(RedisDedupStore store, RedisConnection connection, Failures failures, long waitNanos) {
        List<String> nodes = connection.cluster() ? connection.masters() : Collections.singletonList(null);
        List<String> warnings = new ArrayList<>();
        for (String node : nodes) {
            String where = failures.endpoint() + (node == null ? "" : " (cluster node " + node + ")");
            Map<String, String> config;
            try {
                config = store.await(connection.node(node).configGet("hash-max-*").toCompletableFuture(),
                        "CONFIG GET hash-max-*", System.nanoTime() + waitNanos);
            } catch (RuntimeException e) {
                LOG.debug("Could not read CONFIG GET hash-max-* of Redis at {} to check its listpack limits: {}", where,
                        e.getMessage());
                continue;
            }
            tooSmall(config).ifPresent(limits -> {
                String warning = "Redis at " + where + " keeps a hash as one listpack only up to " + limits
                        + ": the buckets of pack-completed need " + ENTRIES + " fields of " + VALUE + " bytes (Redis's"
                        + " defaults), else Redis keeps them as hash tables and a packed key costs about what a key of"
                        + " its own does. Raise hash-max-listpack-entries and hash-max-listpack-value on it, or turn"
                        + " pack-completed off.";
                LOG.warn(warning);
                warnings.add(warning);
            });
        }
        return warnings;
    }

    /**
     * The server's limits as a phrase, e.g. {@code "128 fields of 32 bytes"}, when either is below what a bucket
     * needs; empty when both suffice or the reply holds neither name.
     */
    static Optional<String> tooSmall(Map<String, String> config) {
        Long entries = number(config, "hash-max-listpack-entries", "hash-max-ziplist-entries");
        Long value = number(config, "hash-max-listpack-value", "hash-max-ziplist-value");
        if (entries == null || value == null || entries >= ENTRIES && value >= VALUE) {
            return Optional.empty();
        }
        return Optional.of(entries + " fields of " + value + " bytes");
    }

    private static Long number(Map<String, String> config, String name, String earlierName) {
        String text = config.containsKey(name) ? config.get(name) : config.get(earlierName);
        if (text == null) {
            return null;
        }
        try {
            return Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
