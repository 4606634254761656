package dev.idem.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode.NodeFlag;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One Lettuce connection (standalone, Sentinel or Cluster) with its client and threads, shared by every
 * caller of the store: Lettuce connections are thread-safe and pipeline the commands of concurrent callers.
 *
 * <p>Choices that shape the store's failure behaviour:
 * <ul>
 * <li>Commands time out after the command timeout ({@link TimeoutOptions}), so no call waits forever; a
 *     {@code WAIT} after the command timeout plus its own ({@code store.redis.wait.timeout}), as the server holds
 *     it that long by design.</li>
 * <li>While disconnected, commands are rejected at once instead of queued ({@code REJECT_COMMANDS}): the
 *     caller gets a retriable error to back off on, and no claim is sent long after its caller gave up.</li>
 * <li>Reconnection backs off exponentially to at most one second (Lettuce's default is 30s), so the store
 *     works again within about a second of Redis coming back.</li>
 * </ul>
 *
 * <p>Keys and values are raw bytes ({@link ByteArrayCodec}): the store encodes them itself.
 *
 * <p>{@link #connects()} counts the (re)connections of a standalone or Sentinel connection: {@link ReplicaWait}
 * takes a {@code WAIT} answered under another count than its write's as no confirmation, since it covers none of
 * the lost connection's writes. With {@code REJECT_COMMANDS} Lettuce fails the commands a lost connection left
 * unanswered instead of sending them again after reconnecting, so a write and its {@code WAIT} normally fail
 * together; the count keeps the rule from resting on that setting alone.
 */
final class RedisConnection implements AutoCloseable {

    private static final Delay RECONNECT_DELAY =
            Delay.exponential(Duration.ofMillis(10), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS);

    private final ClientResources resources;
    private final AbstractRedisClient client;
    private final StatefulConnection<byte[], byte[]> connection;
    private final RedisClusterAsyncCommands<byte[], byte[]> commands;
    private final boolean cluster;
    private final AtomicLong connects;

    private RedisConnection(ClientResources resources, AbstractRedisClient client,
            StatefulConnection<byte[], byte[]> connection, RedisClusterAsyncCommands<byte[], byte[]> commands,
            boolean cluster, AtomicLong connects) {
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        this.commands = commands;
        this.cluster = cluster;
        this.connects = connects;
    }

    /**
     * Connects, or throws what Lettuce throws (a {@link io.lettuce.core.RedisException}) after releasing
     * everything it had started.
     *
     * @param waitTimeout how long the server may hold a {@code WAIT} ({@code store.redis.wait.timeout}), added to
     *        the command timeout for that command alone
     * @param ssl trust settings for {@code rediss://}, or {@code null} for the JVM's defaults
     */
    static RedisConnection open(RedisURI uri, boolean cluster, Duration commandTimeout, Duration waitTimeout,
            SslOptions ssl) {
        ClientResources resources = DefaultClientResources.builder().reconnectDelay(RECONNECT_DELAY).build();
        AbstractRedisClient client = null;
        try {
            TimeoutOptions timeouts = timeouts(commandTimeout, waitTimeout);
            if (cluster) {
                RedisClusterClient clusterClient = RedisClusterClient.create(resources, uri);
                clusterClient.setOptions(clusterOptions(timeouts, commandTimeout, ssl));
                client = clusterClient;
                StatefulRedisClusterConnection<byte[], byte[]> connection = clusterClient.connect(ByteArrayCodec.INSTANCE);
                return new RedisConnection(resources, client, connection, connection.async(), true, new AtomicLong());
            }
            RedisClient redisClient = RedisClient.create(resources, uri);
            redisClient.setOptions(options(ClientOptions.builder(), timeouts, commandTimeout, ssl).build());
            client = redisClient;
            AtomicLong connects = new AtomicLong();
            AtomicReference<RedisChannelHandler<?, ?>> self = new AtomicReference<>();
            // Lettuce calls this on the connection's event loop when the channel becomes active, before any reply
            // can be read on it; the Sentinel look-ups' own connections are other handlers and do not count.
            redisClient.addListener(new RedisConnectionStateListener() {
                @Override
                public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
                    if (handler == self.get()) {
                        connects.incrementAndGet();
                    }
                }
            });
            StatefulRedisConnection<byte[], byte[]> connection = redisClient.connect(ByteArrayCodec.INSTANCE);
            self.set((RedisChannelHandler<?, ?>) connection);
            return new RedisConnection(resources, client, connection, connection.async(), false, connects);
        } catch (RuntimeException e) {
            shutdown(client, resources);
            throw e;
        }
    }

    /** The command timeout for every command, plus {@code waitTimeout} for a {@code WAIT}. */
    private static TimeoutOptions timeouts(Duration commandTimeout, Duration waitTimeout) {
        long plain = commandTimeout.toNanos();
        long waiting = commandTimeout.plus(waitTimeout).toNanos();
        return TimeoutOptions.builder().timeoutSource(new TimeoutOptions.TimeoutSource() {
            @Override
            public long getTimeout(RedisCommand<?, ?, ?> command) {
                return command.getType() == CommandType.WAIT ? waiting : plain;
            }

            @Override
            public TimeUnit getTimeUnit() {
                return TimeUnit.NANOSECONDS;
            }
        }).build();
    }

    private static ClusterClientOptions clusterOptions(TimeoutOptions timeouts, Duration commandTimeout,
            SslOptions ssl) {
        ClusterClientOptions.Builder builder = ClusterClientOptions.builder()
                // Follow failovers and resharding as soon as a node says MOVED or a connection drops.
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .enablePeriodicRefresh(Duration.ofSeconds(30))
                        .build());
        options(builder, timeouts, commandTimeout, ssl);
        return builder.build();
    }

    private static <B extends ClientOptions.Builder> B options(B builder, TimeoutOptions timeouts,
            Duration commandTimeout, SslOptions ssl) {
        builder.timeoutOptions(timeouts)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(SocketOptions.builder().connectTimeout(commandTimeout).keepAlive(true).build());
        if (ssl != null) {
            builder.sslOptions(ssl);
        }
        return builder;
    }

    /** The commands common to standalone and Cluster connections; thread-safe. */
    RedisClusterAsyncCommands<byte[], byte[]> commands() {
        return commands;
    }

    /**
     * How many times the connection has connected again since it was opened (always 0 in Cluster mode, where
     * nothing reads it). Read before sending a write and after its {@code WAIT} answered: the same count means
     * both went over one connection to one server.
     */
    long connects() {
        return connects.get();
    }

    /** Whether keys of one call must share a hash slot. */
    boolean cluster() {
        return cluster;
    }

    /**
     * The node IDs of the cluster's masters as the client last saw the topology, sorted; for {@code SCAN}, which
     * each node answers for its own keys alone. Empty for a standalone or Sentinel connection.
     */
    List<String> masters() {
        if (!cluster) {
            return List.of();
        }
        return ((StatefulRedisClusterConnection<byte[], byte[]>) connection).getPartitions().stream()
                .filter(node -> node.is(NodeFlag.UPSTREAM) && !node.is(NodeFlag.FAIL))
                .map(RedisClusterNode::getNodeId)
                .sorted()
                .toList();
    }

    /**
     * The commands of one node of the cluster, on the connection the cluster connection keeps to it (closed with
     * it); the commands of the whole connection for a standalone or Sentinel connection ({@code nodeId} null).
     */
    RedisClusterAsyncCommands<byte[], byte[]> node(String nodeId) {
        if (nodeId == null) {
            return commands;
        }
        return ((StatefulRedisClusterConnection<byte[], byte[]>) connection).getConnection(nodeId).async();
    }

    @Override
    public void close() {
        try {
            connection.close();
        } finally {
            shutdown(client, resources);
        }
    }

    private static void shutdown(AbstractRedisClient client, ClientResources resources) {
        try {
            if (client != null) {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        } finally {
            resources.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
