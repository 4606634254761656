package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.testkit.InspectableDedupStoreContract;
import dev.idem.testkit.ManualTicker;
import io.lettuce.core.AclSetuserArgs;
import io.lettuce.core.protocol.CommandType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole contract in Cluster mode, on a three-node Redis Cluster of the test's own ({@code redis-server}
 * processes joined with {@code redis-cli --cluster create}), so that batches really span nodes.
 */
class RedisClusterDedupStoreTest extends InspectableDedupStoreContract {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final int NODES = 3;

    @TempDir
    static Path dir;
    private static final List<RedisServerProcess> nodes = new ArrayList<>();
    private static RedisKeyspace keyspace;

    /** A prefix per test, so that stats see only its keys. */
    private final String prefix = "idem-" + UUID.randomUUID().toString().substring(0, 8) + ":";

    @BeforeAll
    static void startCluster() throws Exception {
        Path server = RedisServerProcess.requireBinary("redis-server");
        Path cli = RedisServerProcess.requireBinary("redis-cli");
        List<String> create = new ArrayList<>(List.of(cli.toString(), "--cluster", "create"));
        for (int i = 0; i < NODES; i++) {
            int port = RedisServerProcess.freePort();
            Path nodeDir = Files.createDirectories(dir.resolve("node-" + port));
            RedisServerProcess node = new RedisServerProcess(server, port, nodeDir, "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000");
            nodes.add(node);
            node.start();
            create.add("127.0.0.1:" + port);
        }
        create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        run(create);
        for (RedisServerProcess node : nodes) {
            awaitClusterOk(cli, node.port());
        }
        keyspace = RedisKeyspace.cluster(nodes.get(0).url());
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (keyspace != null) {
            keyspace.close();
        }
        for (RedisServerProcess node : nodes) {
            node.close();
        }
    }

    @Override
    protected InspectableDedupStore createInspectableStore(ManualTicker ticker) {
        return (InspectableDedupStore) PROVIDER.create(
                RedisDedupStoreTest.config(nodes.get(0).url(), prefix).with("cluster", true),
                new StoreContext(ticker));
    }

    @Override
    protected void advanceStoreClock(Duration duration) {
        keyspace.advance(RedisKeyspace.glob(prefix, namespace()), duration);
    }

    @Override
    protected Duration clockResolution() {
        return Duration.ofSeconds(1);
    }

    /**
     * {@code pack-completed} in Cluster mode: each key's bucket family lies on its own slot, so a batch over many slots
     * packs, reads, lists, counts and purges its completions on every node.
     */
    @Test
    void packedCompletionsOverEverySlotOfABatchAreDuplicatesListedCountedAndPurged() {
        String packedPrefix = "idem-packed-" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (InspectableDedupStore packed = (InspectableDedupStore) PROVIDER.create(
                RedisPackedDedupStoreTest.packed(nodes.get(0).url(), packedPrefix).with("cluster", true),
                new StoreContext(ticker()))) {
            List<ClaimRequest> requests = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                StoreKey key = new StoreKey(namespace(), UUID.randomUUID().toString());
                requests.add(new ClaimRequest(key, RedisPackedDedupStoreTest.sha256(key.id()), LEASE, CLAIM_RETENTION));
            }
            List<ClaimResult> claimed = packed.claim(requests);
            List<CompletionRequest> completions = new ArrayList<>();
            for (int i = 0; i < requests.size(); i++) {
                completions.add(new CompletionRequest(requests.get(i).key(), ((Acquired) claimed.get(i)).token(),
                        RETENTION));
            }
            assertThat(packed.completeAll(completions)).allSatisfy(r ->
                    assertThat(r).isEqualTo(CompletionResult.COMPLETED));

            RedisKeys keys = new RedisKeys(packedPrefix);
            assertThat(keyspace.redis().exists(keys.encode(requests.get(0).key()))).as("no string").isZero();
            assertThat(packed.claim(requests)).allSatisfy(r -> assertThat(r).isEqualTo(new Duplicate(true)));
            Set<StoreKey> listed = new HashSet<>();
            String cursor = null;
            do {
                var page = packed.list(namespace(), dev.idem.spi.KeyFilter.ALL, cursor, 64);
                page.keys().forEach(k -> assertThat(listed.add(k.key())).isTrue());
                cursor = page.cursor();
            } while (cursor != null);
            assertThat(listed).hasSize(300);
            assertThat(packed.stats().completed()).isEqualTo(300);
            long purged = 0;
            cursor = null;
            do {
                var batch = packed.purge(namespace(), java.time.Instant.now().plus(RETENTION).plusSeconds(5), cursor,
                        1000);
                purged += batch.deleted();
                cursor = batch.cursor();
            } while (cursor != null);
            assertThat(purged).isEqualTo(300);
            assertThat(packed.claim(requests.subList(0, 1)).get(0)).isInstanceOf(Acquired.class);
        }
    }

    /** A value another application wrote under the prefix, on whichever node holds the key. */
    @Override
    protected boolean failWritesOf(StoreKey key) {
        keyspace.redis().set(new RedisKeys(prefix).encode(key), "not ours".getBytes(StandardCharsets.US_ASCII));
        return true;
    }

    @Test
    void batchSpreadOverEveryNodeIsClaimedInOneCallRepeatsAcquireOnceAndStatsCountEveryNode() throws Exception {
        List<ClaimRequest> batch = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            batch.add(new ClaimRequest(key("order-" + i % 200), null, LEASE, CLAIM_RETENTION));
        }

        List<ClaimResult> results = store().claim(batch);

        assertThat(results.subList(0, 200)).allSatisfy(r -> assertThat(r).isInstanceOf(Acquired.class));
        assertThat(results.subList(200, 300)).allSatisfy(r -> assertThat(r).isInstanceOf(InProgress.class));
        for (RedisServerProcess node : nodes) {
            try (RedisKeyspace one = RedisKeyspace.standalone(node.url())) {
                assertThat(one.keys(RedisKeyspace.glob(prefix, namespace()))).as("keys on node %s", node.port())
                        .isNotEmpty();
            }
        }
        assertThat(inspectable().stats()).as("counted on every master").isEqualTo(new StoreStats(200, 0, false));
    }

    @Test
    void nodeThatRefusesScriptsFailsTheCompletionsOfItsOwnKeysAloneAndTheOtherNodesComplete() {
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            keys.add(key("order-" + i));
        }
        List<ClaimResult> claimed = store().claim(keys.stream()
                .map(key -> new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)).toList());
        List<CompletionRequest> completions = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            completions.add(new CompletionRequest(keys.get(i), ((Acquired) claimed.get(i)).token(), RETENTION));
        }
        RedisServerProcess refusing = nodes.get(1);
        Set<String> onRefusingNode = new HashSet<>();
        try (RedisKeyspace node = RedisKeyspace.standalone(refusing.url())) {
            for (byte[] name : node.keys(RedisKeyspace.glob(prefix, namespace()))) {
                onRefusingNode.add(new String(name, StandardCharsets.UTF_8));
            }
            assertThat(onRefusingNode).as("keys on the refusing node").isNotEmpty().hasSizeLessThan(keys.size());

            node.redis().aclSetuser("default",
                    AclSetuserArgs.Builder.removeCommand(CommandType.EVALSHA).removeCommand(CommandType.EVAL));
            List<CompletionResult> results;
            try {
                results = store().completeAll(completions);
            } finally {
                node.redis().aclSetuser("default", AclSetuserArgs.Builder.allCommands());
            }

            for (int i = 0; i < keys.size(); i++) {
                String name = new String(new RedisKeys(prefix).encode(keys.get(i)), StandardCharsets.UTF_8);
                if (onRefusingNode.contains(name)) {
                    assertThat(results.get(i)).as("completion of %s on the refusing node", keys.get(i))
                            .isInstanceOfSatisfying(CompletionResult.Failed.class, failed -> assertThat(failed.cause())
                                    .satisfies(e -> assertThat(e.retriable()).isFalse())
                                    .hasMessageContaining("NOPERM"));
                } else {
                    assertThat(results.get(i)).as("completion of %s", keys.get(i)).isEqualTo(CompletionResult.COMPLETED);
                }
            }
        }

        assertThat(store().completeAll(completions)).as("once the node runs scripts again")
                .containsOnly(CompletionResult.COMPLETED);
        assertThat(store().claim(keys.stream().map(key -> new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)).toList()))
                .containsOnly(new Duplicate(true));
    }

    @Test
    void toStringSaysCluster() {
        try (DedupStore store = createInspectableStore(new ManualTicker())) {
            assertThat(store.toString()).isEqualTo("RedisDedupStore[" + nodes.get(0).url() + " (cluster), key-prefix="
                    + prefix + "]");
        }
    }

    private static void run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed:\n" + output);
        }
    }

    private static void awaitClusterOk(Path cli, int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            Process process = new ProcessBuilder(cli.toString(), "-p", Integer.toString(port), "cluster", "info")
                    .redirectErrorStream(true).start();
            String info = new String(process.getInputStream().readAllBytes());
            process.waitFor(10, TimeUnit.SECONDS);
            if (info.contains("cluster_state:ok")) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Cluster node " + port + " not ready: " + info);
            }
            Thread.sleep(100);
        }
    }
}
