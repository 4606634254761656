package dev.idem.store.redis;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code store.redis.wait.replicas} and {@code wait.timeout}: a Redis {@code WAIT numreplicas timeout} right behind
 * each write that the runtime's guarantees rest on (claims, completions, releases, renewals, recorded starts), so
 * that the store answers such a call only once that many replicas acknowledged the write.
 *
 * <p>Why: Redis replicates asynchronously, and a failover promotes a replica that may lack the primary's last
 * writes. A claim lost that way lets another consumer run the same key while its handler runs; a completion lost
 * that way lets a redelivery run the handler again after the message was acked.
 *
 * <p>How: the {@code WAIT} goes on the store's one connection right behind the write's script (and behind its
 * {@code EVAL} when the server did not know the script, {@link LuaScript#run}), without waiting for the script's
 * answer. {@code WAIT} blocks that connection until every write sent on it before reached the replicas, so it also
 * covers the other callers' writes ahead of it. Its answer proves nothing when it came over another connection
 * than the write's: a {@code WAIT} on a new connection (after a reconnect, perhaps to another primary) covers none
 * of the old one's writes. Lettuce fails, rather than sends again, what a lost connection left unanswered
 * ({@link RedisConnection}), and the connection count ({@link RedisConnection#connects()}) catches such an answer
 * anyway. Such an answer, and too few acknowledgements, fail the call with a retriable
 * {@link dev.idem.spi.StoreException} through
 * {@link Failures#of}: the pipeline runs no handler on such a claim, and tries such a completion again with the
 * same token (which completes once, whichever try lands).
 *
 * <p>What it does not do: make Redis consistent. A write acknowledged by {@code n} replicas survives a failover
 * when the replica promoted is one of them, which Sentinel's choice (the replica with the most data, among those of
 * the best {@code replica-priority} it can reach) makes so unless the replicas differ in priority or those that
 * acknowledged are unreachable. Not available in Cluster mode, where a batch's writes go to several primaries.
 *
 * <p>Immutable and thread-safe.
 */
final class ReplicaWait {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaWait.class);

    /** A write failed because its replication was not confirmed; {@link Failures#of} words it for the operation. */
    static final class NotReplicated extends RuntimeException {

        private static final long serialVersionUID = 1L;

        final long acknowledged;
        final int required;
        final Duration timeout;
        final boolean reconnected;

        NotReplicated(long acknowledged, int required, Duration timeout, boolean reconnected) {
            super(reconnected ? "reconnected before the replicas confirmed the write"
                    : acknowledged + " of " + required + " replicas acknowledged the write", null, false, false);
            this.acknowledged = acknowledged;
            this.required = required;
            this.timeout = timeout;
            this.reconnected = reconnected;
        }
    }

    private final int replicas;
    private final Duration timeout;
    private final RedisConnection connection;

    /**
     * @param replicas how many replicas must acknowledge each write; 0 sends no {@code WAIT}
     * @param timeout how long the server may wait for them
     */
    ReplicaWait(int replicas, Duration timeout, RedisConnection connection) {
        this.replicas = replicas;
        this.timeout = timeout;
        this.connection = connection;
    }

    /** Whether writes wait for replicas. */
    boolean on() {
        return replicas > 0;
    }

    /** How much longer than another call a write may take: the {@code WAIT}'s timeout, or nothing when off. */
    long extraNanos() {
        return on() ? timeout.toNanos() : 0;
    }

    /**
     * What a write sends right behind its script ({@link LuaScript#run}), or {@code null} when off. Called before the
     * write is sent: the supplier's {@code WAIT} fails with {@link NotReplicated} when the connection was
     * re-established after this call, or when fewer than {@code wait.replicas} replicas acknowledged.
     */
    Supplier<CompletableFuture<Long>> behind() {
        if (!on()) {
            return null;
        }
        long connects = connection.connects();
        long millis = Math.max(1, RedisDedupStore.millis(timeout));
        return () -> connection.commands().waitForReplication(replicas, millis).toCompletableFuture()
                .thenApply(acknowledged -> {
                    if (connection.connects() != connects) {
                        throw new NotReplicated(acknowledged, replicas, timeout, true);
                    }
                    if (acknowledged < replicas) {
                        throw new NotReplicated(acknowledged, replicas, timeout, false);
                    }
                    return acknowledged;
                });
    }

    /**
     * Logs, and answers, a warning when writes cannot be confirmed now: the server is not a primary, or fewer
     * replicas than {@code wait.replicas} are connected to it ({@code INFO replication}). It never fails the start:
     * replicas may still be starting, and until enough of them are there every write fails retriably.
     */
    List<String> warnIfTooFewReplicas(RedisDedupStore store, Failures failures, long waitNanos) {
        if (!on()) {
            return List.of();
        }
        String info;
        try {
            info = store.await(connection.commands().info("replication").toCompletableFuture(), "INFO replication",
                    System.nanoTime() + waitNanos);
        } catch (RuntimeException e) {
            LOG.debug("Could not read INFO replication of Redis at {} to count its replicas: {}", failures.endpoint(),
                    e.getMessage());
            return List.of();
        }
        return shortfall(info, replicas).map(problem -> {
            String warning = "Redis at " + failures.endpoint() + " " + problem + ", and wait.replicas is " + replicas
                    + ": every claim and completion fails (retriably, so nothing is acked) until " + replicas
                    + (replicas == 1 ? " replica acknowledges" : " replicas acknowledge") + " the writes.";
            LOG.warn(warning);
            return List.of(warning);
        }).orElse(List.of());
    }

    /**
     * What in an {@code INFO replication} reply keeps {@code replicas} from acknowledging; empty when nothing does.
     * Counts the replicas whose state is {@code online}: one still loading its first copy acknowledges nothing yet.
     */
    static Optional<String> shortfall(String info, int replicas) {
        if ("slave".equals(field(info, "role"))) {
            return Optional.of("is a replica, not the primary");
        }
        if (field(info, "connected_slaves") == null) {
            return Optional.empty();
        }
        int online = 0;
        for (String line : info.split("\r?\n")) {
            if (line.matches("slave\\d+:.*") && line.contains("state=online")) {
                online++;
            }
        }
        return online < replicas ? Optional.of("has " + online + (online == 1 ? " replica" : " replicas") + " online")
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
