package dev.idem.store.redis;

import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import dev.idem.spi.StoreContext;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The {@code redis} dedup store: keys in Redis (5.0 or later; standalone, Sentinel or Cluster), shared
 * by every process of a pipeline, through the Lettuce client.
 *
 * <h2>What is stored</h2>
 * One Redis string per key, named {@code <key-prefix><namespace length>:<namespace>:<id>} (e.g.
 * {@code idem:8:payments:order-42}; the byte length keeps namespace and id apart whatever they hold),
 * holding a small record and a TTL: a claim (fencing token, attempts, lease deadline, recorded starts, fingerprint)
 * lives for its lease plus the claim retention, so that a takeover still sees the attempts and recorded starts; a
 * completed key (its token, attempts and fingerprint only, in 43 bytes with a SHA-256; see {@code RedisDedupStore})
 * for its retention; with {@code pack-completed: true}, a field of a small hash of its namespace's completed keys,
 * about 100 bytes a key instead of about 230 (see {@code RedisDedupStore}). Redis removes expired keys itself, and the
 * store sweeps expired packed fields as it writes; nothing needs purging. Every state
 * change is one atomic Lua script, loaded once and called by SHA, and reads the server's clock
 * ({@code TIME}), so consumers on hosts whose clocks differ still agree on leases.
 *
 * <p>The store is also a {@link dev.idem.spi.SequencedDedupStore}: a sequence guard's watermark is one more
 * string per aggregate, {@code <key-prefix>seq:<namespace length>:<namespace>:<aggregate>} (never mistaken for a
 * message key, whose prefix is followed by a digit), holding the highest number completed and kept for the
 * guard's retention after its last change. It is raised in the script that completes the event's key, so the two
 * change together; in Cluster mode only when both share a hash slot (always with a hash tag in the prefix), and
 * otherwise by a second call right after the completion (see {@code RedisWatermarks}).
 *
 * <p>It is also a {@link dev.idem.spi.ReplyStore}: the reply a request's handler sent, stored with the key's
 * completion, is one more string per key completed with a reply, {@code <key-prefix>reply:{<tag>}:<namespace
 * length>:<namespace>:<id>} (the tag puts it on the message key's hash slot), holding the completion's token and the
 * reply's headers and payload, with the completion's retention as its TTL; it is written in the completion's own
 * script (see {@code RedisReplies}). Keys completed without a reply have none.
 *
 * <h2>Fencing tokens</h2>
 * Random 63-bit numbers drawn by the client, not a counter in Redis: a counter restarts when Redis loses
 * its data (a restart without persistence, a failover losing the last writes) and would then hand out
 * tokens that stale consumers still hold. Fencing compares the tokens of one key, so a stale token equals
 * the current one with probability 2<sup>-63</sup>.
 *
 * <h2>Batches and Redis Cluster</h2>
 * A batch of claims is one script call holding every key of the batch: one round trip. In Cluster mode
 * ({@code cluster: true}) a script may only touch keys of one hash slot, so the batch is split by slot,
 * one script call per slot, all sent at once on the connections to their nodes and awaited together:
 * still one round trip to each node. This was chosen over a hash tag per namespace ({@code {payments}}
 * in every key), which would put all keys of a pipeline on one slot: that pipeline's whole load and
 * memory would sit on one node, defeating the cluster. The price is a script call per distinct slot,
 * about one per key for batches well below 16,384 keys. Whoever prefers one call per batch on one node
 * can put a hash tag into the prefix ({@code key-prefix: "{idem}:"}): Redis then hashes only what is
 * between the braces. Note that Redis also takes a {@code {...}} inside a namespace or message key as a
 * hash tag when the prefix holds none; that only changes where the key lives.
 *
 * <h2>Replicas and failover</h2>
 * Redis replicates asynchronously: a claim or completion the primary acknowledged can be missing on the replica a
 * failover promotes, and its message then runs twice (a lost claim lets another consumer run the key beside its
 * owner; a lost completion lets a redelivery run it again after the ack). With {@code wait.replicas: n} every
 * write the runtime relies on (claims, completions, releases, renewals, recorded starts) sends a {@code WAIT n
 * timeout} right behind it on the same connection, and fails retriably unless {@code n} replicas acknowledged it
 * within {@code wait.timeout}; see {@code ReplicaWait}. A claim that failed after it was sent (a timeout, a lost
 * connection, too few acknowledgements) leaves its tokens for the next claim of the same keys, which then holds
 * what the failed one may have taken instead of finding it in progress (see {@code UnclaimedTokens}). With a
 * {@code redis-sentinel://} URI the client asks the Sentinels for the primary at every (re)connection, so it
 * follows a failover once its connection to the old primary drops.
 *
 * <h2>Failures</h2>
 * An unreachable server, a timeout ({@code command-timeout}), a server loading, busy or read-only after a
 * failover are retriable {@link dev.idem.spi.StoreException}s; wrong credentials, missing ACL rights or
 * keys under the prefix written by another application are not. While disconnected, calls fail at once
 * instead of queueing; the client reconnects by itself, retrying at least once a second. Messages name the
 * URI without its password.
 *
 * <h2>Operator view</h2>
 * The store it creates is also an {@link dev.idem.spi.InspectableDedupStore}. Its {@code stats} scans the
 * whole database (every master of a Cluster) for keys under the prefix and reads each: it costs about one
 * {@code GET} per Idem key, stops after a million keys or ten seconds (then it says it was truncated), and
 * on a large store is best run when the load is low.
 *
 * <p>Stateless and thread-safe, as every provider is; the stores it creates are thread-safe. Found through
 * {@link java.util.ServiceLoader}. {@link StoreContext#nanoTicker()} is not used: time is the server's.
 */
public final class RedisDedupStoreProvider implements DedupStoreProvider {

    /** The id users write in {@code store.type}. */
    public static final String ID = "redis";

    /** {@code store.redis.uri}: where Redis is. */
    public static final ConfigKey<String> URI = ConfigKey.string("uri")
            .defaultValue("redis://127.0.0.1:6379")
            .validate(RedisDedupStoreProvider::parses, "be a Redis URI: redis://host:6379[/database], "
                    + "rediss://host:6380 for TLS, or redis-sentinel://host:26379[,host2:26379]#master-name")
            .doc("Where Redis is: redis://host:port[/database], rediss:// for TLS, redis-sentinel://host:port"
                    + "[,host:port...]#master-name for Sentinel, or any node of a Redis Cluster together with "
                    + "cluster: true. Give the password in 'password', not here, so that it is never printed.");

    /** {@code store.redis.username}: the ACL user. */
    public static final ConfigKey<String> USERNAME = ConfigKey.string("username")
            .doc("The Redis ACL user (Redis 6 or later); leave out for the default user. Needs 'password'.");

    /** {@code store.redis.password}: a secret, best given as {@code ${REDIS_PASSWORD}}. */
    public static final ConfigKey<Secret> PASSWORD = ConfigKey.secret("password")
            .doc("The password (requirepass or the ACL user's); leave out when Redis needs none. "
                    + "Give it from the environment, e.g. ${REDIS_PASSWORD}; it is masked wherever printed.");

    /** {@code store.redis.key-prefix}: what every key of this store starts with. */
    public static final ConfigKey<String> KEY_PREFIX = ConfigKey.string("key-prefix")
            .defaultValue("idem:")
            .validate(prefix -> !prefix.isEmpty(), "not be empty")
            .doc("What every Redis key of this store starts with, so that it shares a server with other "
                    + "applications. Runtimes that must see each other's keys use the same prefix. In a "
                    + "cluster, a hash tag here (\"{idem}:\") puts every key on one slot.");

    /** {@code store.redis.command-timeout}: how long one call may take. */
    public static final ConfigKey<Duration> COMMAND_TIMEOUT = ConfigKey.duration("command-timeout")
            .defaultValue(Duration.ofSeconds(2))
            .atLeast(Duration.ofMillis(1))
            .atMost(Duration.ofMinutes(10))
            .doc("How long a command (and a connection attempt) may take before the call fails with a "
                    + "retriable store error; the pipeline then backs off and tries again.");

    /** {@code store.redis.cluster}: whether the URI names a Redis Cluster node. */
    public static final ConfigKey<Boolean> CLUSTER = ConfigKey.bool("cluster")
            .defaultValue(false)
            .doc("Whether uri names a node of a Redis Cluster; the client then discovers the other nodes and "
                    + "follows resharding and failovers. A batch of claims becomes one script call per hash "
                    + "slot, sent at once.");

    /** {@code store.redis.tls.verify-peer}: whether a rediss:// server's certificate is checked. */
    public static final ConfigKey<Boolean> TLS_VERIFY_PEER = ConfigKey.bool("tls.verify-peer")
            .defaultValue(true)
            .doc("With rediss://: whether the server's certificate must be trusted and name the host. Turn "
                    + "off only for tests; anyone between Idem and Redis could then read and forge claims.");

    /** {@code store.redis.tls.ca-certificates}: a PEM file of CAs to trust instead of the JVM's. */
    public static final ConfigKey<String> TLS_CA_CERTIFICATES = ConfigKey.string("tls.ca-certificates")
            .doc("With rediss://: a PEM file of the CA certificates to trust (e.g. a private CA's), instead "
                    + "of the JVM's trust store.");

    /** {@code store.redis.wait.replicas}: how many replicas must acknowledge each write before it counts. */
    public static final ConfigKey<Integer> WAIT_REPLICAS = ConfigKey.integer("wait.replicas")
            .defaultValue(0)
            .atLeast(0)
            .doc("How many replicas must have acknowledged each claim, completion, release, renewal and recorded "
                    + "start before the store answers it (a Redis WAIT sent right behind the write, on the same "
                    + "connection). Redis replicates asynchronously: a write the primary acknowledged and a failover "
                    + "lost lets a message run twice. When fewer replicas acknowledge within wait.timeout, the call "
                    + "fails with a retriable store error, so no handler runs on such a claim and no message is "
                    + "acked on such a completion; the pipeline tries again. 0 waits for none. Not with "
                    + "cluster: true.");

    /** {@code store.redis.wait.timeout}: how long a write waits for its replicas. */
    public static final ConfigKey<Duration> WAIT_TIMEOUT = ConfigKey.duration("wait.timeout")
            .defaultValue(Duration.ofSeconds(1))
            .atLeast(Duration.ofMillis(1))
            .atMost(Duration.ofMinutes(1))
            .doc("With wait.replicas: how long a write waits for its replicas before it fails (retriably). The "
                    + "wait holds the store's one connection, so the calls behind it wait too: it must be less than "
                    + "command-timeout.");

    /** {@code store.redis.pack-completed}: whether completed keys are written as fields of small hashes. */
    public static final ConfigKey<Boolean> PACK_COMPLETED = ConfigKey.bool("pack-completed")
            .defaultValue(false)
            .doc("Whether a completed key is written as a field of a small hash among other completed keys of its "
                    + "namespace (and hash slot, in a cluster): about 100 bytes of Redis memory a key instead of about "
                    + "230 (a UUID ID and a SHA-256 fingerprint), for a few more commands in each script, so more of "
                    + "Redis's CPU. The store keeps such a key's expiry itself. This release reads packed keys whether "
                    + "or not it writes them, earlier releases do not: turn it on once every process sharing the "
                    + "key-prefix runs this release or later. An ID or fingerprint too long for a field stays a key of "
                    + "its own.");

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(URI)
            .define(USERNAME)
            .define(PASSWORD)
            .define(KEY_PREFIX)
            .define(COMMAND_TIMEOUT)
            .define(CLUSTER)
            .define(TLS_VERIFY_PEER)
            .define(TLS_CA_CERTIFICATES)
            .define(WAIT_REPLICAS)
            .define(WAIT_TIMEOUT)
            .define(PACK_COMPLETED)
            .build();

    /** For {@link java.util.ServiceLoader}. */
    public RedisDedupStoreProvider() {
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    /**
     * Checks the keys together without connecting: a URI the client cannot parse, Sentinel with {@code cluster},
     * a username without password, TLS settings without {@code rediss://}, an unreadable CA file, waiting for
     * replicas in Cluster mode or for longer than {@code command-timeout}.
     */
    @Override
    public List<ConfigProblem> validate(PluginConfig config) {
        Objects.requireNonNull(config, "config");
        List<ConfigProblem> problems = new ArrayList<>();
        String endpoint = withoutPassword(config.get(URI));
        RedisURI uri = uri(config, endpoint, problems);
        if (uri != null) {
            ssl(config, uri, endpoint, problems);
        }
        replicaWait(config, problems);
        packing(config, problems);
        return problems;
    }

    /**
     * Connects to Redis and loads the store's scripts.
     *
     * @throws ConfigException with what {@link #validate} reports
     * @throws dev.idem.spi.StoreException if Redis cannot be reached (retriable) or refuses the credentials
     */
    @Override
    public DedupStore create(PluginConfig config, StoreContext context) {
        Objects.requireNonNull(config, "config");
        String path = config.path();
        String text = config.get(URI);
        String endpoint = withoutPassword(text);
        List<ConfigProblem> problems = new ArrayList<>();
        RedisURI uri = uri(config, endpoint, problems);
        SslOptions ssl = uri == null ? null : ssl(config, uri, endpoint, problems);
        replicaWait(config, problems);
        packing(config, problems);
        ConfigProblem.throwIfAny(problems);
        boolean cluster = config.get(CLUSTER);
        Duration timeout = config.get(COMMAND_TIMEOUT);
        uri.setTimeout(timeout);
        int waitReplicas = config.get(WAIT_REPLICAS);
        Duration waitTimeout = waitReplicas > 0 ? config.get(WAIT_TIMEOUT) : Duration.ZERO;

        Failures failures = new Failures(endpoint, path, timeout);
        RedisConnection connection;
        try {
            connection = RedisConnection.open(uri, cluster, timeout, waitTimeout, ssl);
        } catch (RuntimeException e) {
            throw failures.of("the first connection", e);
        }
        try {
            RedisDedupStore store = new RedisDedupStore(connection, config.get(KEY_PREFIX), failures, timeout,
                    new ReplicaWait(waitReplicas, waitTimeout, connection), config.get(PACK_COMPLETED));
            store.loadScripts();
            store.warnIfKeysMayBeEvicted();
            store.warnIfBucketsWouldNotPack();
            store.warnIfTooFewReplicas();
            return store;
        } catch (RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /** The client's URI with the credentials set; {@code null} when anything was added to {@code problems}. */
    private static RedisURI uri(PluginConfig config, String endpoint, List<ConfigProblem> problems) {
        String path = config.path();
        RedisURI uri;
        try {
            uri = RedisURI.create(config.get(URI));
        } catch (RuntimeException e) {
            problems.add(ConfigProblem.invalid(path + ".uri", endpoint, String.valueOf(e.getMessage())));
            return null;
        }
        int before = problems.size();
        if (config.get(CLUSTER) && !uri.getSentinels().isEmpty()) {
            problems.add(new ConfigProblem(path + ".cluster", path + ".cluster is true but " + path + ".uri '"
                    + endpoint + "' names Sentinels; a Redis Cluster has no Sentinels: give any cluster node as"
                    + " redis:// or rediss://"));
        }
        String username = config.get(USERNAME);
        Secret password = config.get(PASSWORD);
        if (username != null && password == null) {
            problems.add(new ConfigProblem(path + ".username", path + ".username is set but " + path + ".password is"
                    + " not: give both, or neither for the default user"));
        }
        if (problems.size() > before) {
            return null;
        }
        if (password != null) {
            if (username != null) {
                uri.setAuthentication(username, password.reveal().toCharArray());
            } else {
                uri.setAuthentication(password.reveal().toCharArray());
            }
        }
        return uri;
    }

    /**
     * Adds what keeps {@code wait.*} from working as asked: Cluster mode, where a batch's writes go to several
     * primaries and one {@code WAIT} cannot follow them; a wait as long as {@code command-timeout}, which would time
     * out the calls queued behind it on the store's one connection before it fails itself.
     */
    private static void replicaWait(PluginConfig config, List<ConfigProblem> problems) {
        int replicas = config.get(WAIT_REPLICAS);
        if (replicas == 0) {
            return;
        }
        String path = config.path();
        if (config.get(CLUSTER)) {
            problems.add(new ConfigProblem(path + ".wait.replicas", path + ".wait.replicas is " + replicas + " but "
                    + path + ".cluster is true: waiting for replicas works with one primary (standalone or "
                    + "Sentinel), not with a Redis Cluster, whose batches write to several; set it to 0"));
        }
        Duration wait = config.get(WAIT_TIMEOUT);
        Duration command = config.get(COMMAND_TIMEOUT);
        if (wait.compareTo(command) >= 0) {
            problems.add(new ConfigProblem(path + ".wait.timeout", path + ".wait.timeout ("
                    + ConfigKey.formatDuration(wait) + ") must be less than " + path + ".command-timeout ("
                    + ConfigKey.formatDuration(command) + "): a write waiting for its replicas holds the store's one "
                    + "connection, and the calls behind it would time out first; lower it or raise command-timeout"));
        }
    }

    /**
     * Adds what keeps {@code pack-completed} from working: Cluster mode with a key-prefix whose first braces are empty,
     * where no bucket can share its message key's slot.
     */
    private static void packing(PluginConfig config, List<ConfigProblem> problems) {
        String path = config.path();
        String prefix = config.get(KEY_PREFIX);
        if (config.get(PACK_COMPLETED) && config.get(CLUSTER) && !new RedisKeys(prefix).companionsOnSlot()) {
            problems.add(new ConfigProblem(path + ".pack-completed", path + ".pack-completed is true but " + path
                    + ".key-prefix '" + prefix + "' opens with empty braces, so Redis hashes whole keys and no bucket "
                    + "can share its key's slot in a Redis Cluster: put a name in the braces (\"{idem}:\") or remove "
                    + "them"));
        }
    }

    /** The TLS options, or {@code null} for the JVM's defaults or when a problem was added to {@code problems}. */
    private static SslOptions ssl(PluginConfig config, RedisURI uri, String endpoint, List<ConfigProblem> problems) {
        String path = config.path();
        String caFile = config.get(TLS_CA_CERTIFICATES);
        if (uri.isSsl()) {
            uri.setVerifyPeer(config.get(TLS_VERIFY_PEER) ? SslVerifyMode.FULL : SslVerifyMode.NONE);
        }
        if (caFile == null) {
            return null;
        }
        if (!uri.isSsl()) {
            problems.add(new ConfigProblem(path + ".tls.ca-certificates", path + ".tls.ca-certificates is set but "
                    + path + ".uri '" + endpoint + "' does not use TLS: write rediss:// to use it"));
            return null;
        }
        File file = new File(caFile);
        if (!file.canRead()) {
            problems.add(ConfigProblem.invalid(path + ".tls.ca-certificates", caFile,
                    "must be a readable PEM file of CA certificates"));
            return null;
        }
        return SslOptions.builder().jdkSslProvider().trustManager(file).build();
    }

    private static boolean parses(String uri) {
        try {
            RedisURI.create(uri);
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** The URI with any password masked, for messages: {@code redis://user:******@host:6379}. */
    static String withoutPassword(String uri) {
        return Secret.maskCredentials(uri);
    }
}
