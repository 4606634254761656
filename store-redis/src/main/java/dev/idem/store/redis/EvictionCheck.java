package dev.idem.store.redis;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warns at start when a Redis server may evict the store's keys. With {@code maxmemory} set and a
 * {@code maxmemory-policy} other than {@code noeviction}, a full server drops keys to make room (every key of the
 * store has a TTL, so the {@code volatile-*} policies take them as readily as the {@code allkeys-*} ones): an
 * evicted claim lets another consumer run a handler that is still running, and an evicted completion lets a
 * redelivery run again. Under {@code noeviction} a full server rejects the write instead, which the store reports
 * as a retriable failure and the runtime retries without acking.
 *
 * <p>It reads {@code INFO memory} of the server, or of each master in Cluster mode; a server that refuses
 * {@code INFO} (some managed services restrict it) is not checked, and that is logged at DEBUG. It never fails
 * the start.
 */
final class EvictionCheck {

    private static final Logger LOG = LoggerFactory.getLogger(EvictionCheck.class);

    private EvictionCheck() {
    }

    /** Logs a warning for each server that may evict keys, and answers the warnings. */
    static List<String> warn(RedisDedupStore store, RedisConnection connection, Failures failures, long waitNanos) {
        List<String> nodes = connection.cluster() ? connection.masters() : Collections.singletonList(null);
        List<String> warnings = new ArrayList<>();
        for (String node : nodes) {
            String where = failures.endpoint() + (node == null ? "" : " (cluster node " + node + ")");
            String info;
            try {
                info = store.await(connection.node(node).info("memory").toCompletableFuture(), "INFO memory",
                        System.nanoTime() + waitNanos);
            } catch (RuntimeException e) {
                LOG.debug("Could not read INFO memory of Redis at {} to check its eviction policy: {}", where,
                        e.getMessage());
                continue;
            }
            risk(info).ifPresent(risk -> {
                String warning = "Redis at " + where + " evicts keys when it is full (" + risk + "): an evicted"
                        + " claim lets another consumer run a handler that is still running, and an evicted"
                        + " completion lets a redelivery run again. Set maxmemory-policy noeviction on it (a full"
                        + " server then rejects writes, which Idem retries without acking), or give it no"
                        + " maxmemory.";
                LOG.warn(warning);
                warnings.add(warning);
            });
        }
        return warnings;
    }

    /**
     * What in an {@code INFO memory} reply lets the server evict keys, e.g.
     * {@code "maxmemory-policy allkeys-lru, maxmemory 1073741824 bytes"}; empty when it cannot (no
     * {@code maxmemory}, or {@code noeviction}) or when the reply lacks either field.
     */
    static Optional<String> risk(String info) {
        String policy = field(info, "maxmemory_policy");
        String maxmemory = field(info, "maxmemory");
        if (policy == null || maxmemory == null || policy.equals("noeviction")) {
            return Optional.empty();
        }
        long bytes;
        try {
            bytes = Long.parseLong(maxmemory);
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
        return bytes > 0 ? Optional.of("maxmemory-policy " + policy + ", maxmemory " + bytes + " bytes")
                : Optional.empty();
    }

    private static String field(String info, String name) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(name + ":")) {
                return line.substring(name.length() + 1).trim();
            }
        }
        return null;
    }
}
