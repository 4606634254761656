package dev.idem.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
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
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One Lettuce connection (standalone, Sentinel or Cluster) with its client and threads, shared by every
 * caller of the store: Lettuce connections are thread-safe and pipeline the commands of concurrent callers.
 *
 * <p>Choices that shape the store's failure behaviour:
 * <ul>
 * <li>Commands time out after the command timeout ({@link TimeoutOptions}), so no call waits forever.</li>
 * <li>While disconnected, commands are rejected at once instead of queued ({@code REJECT_COMMANDS}): the
 *     caller gets a retriable error to back off on, and no claim is sent long after its caller gave up.</li>
 * <li>Reconnection backs off exponentially to at most one second (Lettuce's default is 30s), so the store
 *     works again within about a second of Redis coming back.</li>
 * </ul>
 *
 * <p>Keys and values are raw bytes ({@link ByteArrayCodec}): the store encodes them itself.
 */
final class RedisConnection implements AutoCloseable {

    private static final Delay RECONNECT_DELAY =
            Delay.exponential(Duration.ofMillis(10), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS);

    private final ClientResources resources;
    private final AbstractRedisClient client;
    private final StatefulConnection<byte[], byte[]> connection;
    private final RedisClusterAsyncCommands<byte[], byte[]> commands;
    private final boolean cluster;

    private RedisConnection(ClientResources resources, AbstractRedisClient client,
            StatefulConnection<byte[], byte[]> connection, RedisClusterAsyncCommands<byte[], byte[]> commands,
            boolean cluster) {
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        this.commands = commands;
        this.cluster = cluster;
    }

    /**
     * Connects, or throws what Lettuce throws (a {@link io.lettuce.core.RedisException}) after releasing
     * everything it had started.
     *
     * @param ssl trust settings for {@code rediss://}, or {@code null} for the JVM's defaults
     */
    static RedisConnection open(RedisURI uri, boolean cluster, Duration commandTimeout, SslOptions ssl) {
        ClientResources resources = DefaultClientResources.builder().reconnectDelay(RECONNECT_DELAY).build();
        AbstractRedisClient client = null;
        try {
            if (cluster) {
                RedisClusterClient clusterClient = RedisClusterClient.create(resources, uri);
                clusterClient.setOptions(clusterOptions(commandTimeout, ssl));
                client = clusterClient;
                StatefulRedisClusterConnection<byte[], byte[]> connection = clusterClient.connect(ByteArrayCodec.INSTANCE);
                return new RedisConnection(resources, client, connection, connection.async(), true);
            }
            RedisClient redisClient = RedisClient.create(resources, uri);
            redisClient.setOptions(options(ClientOptions.builder(), commandTimeout, ssl).build());
            client = redisClient;
            StatefulRedisConnection<byte[], byte[]> connection = redisClient.connect(ByteArrayCodec.INSTANCE);
            return new RedisConnection(resources, client, connection, connection.async(), false);
        } catch (RuntimeException e) {
            shutdown(client, resources);
            throw e;
        }
    }

    private static ClusterClientOptions clusterOptions(Duration commandTimeout, SslOptions ssl) {
        ClusterClientOptions.Builder builder = ClusterClientOptions.builder()
                // Follow failovers and resharding as soon as a node says MOVED or a connection drops.
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .enablePeriodicRefresh(Duration.ofSeconds(30))
                        .build());
        options(builder, commandTimeout, ssl);
        return builder.build();
    }

    private static <B extends ClientOptions.Builder> B options(B builder, Duration commandTimeout, SslOptions ssl) {
        builder.timeoutOptions(TimeoutOptions.enabled(commandTimeout))
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
