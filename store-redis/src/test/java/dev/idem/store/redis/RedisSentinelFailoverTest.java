package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.store.redis.RedisReplicaWaitTest.Direct;
import dev.idem.testkit.memory.InMemoryBroker;
import io.lettuce.core.RedisClient;
import io.lettuce.core.sentinel.api.StatefulRedisSentinelConnection;
import io.lettuce.core.sentinel.api.sync.RedisSentinelCommands;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replica failover behind Sentinel, on servers of the test's own on loopback ports: a primary, two replicas and one
 * Sentinel (quorum 1, down after 1.5 s). The primary is killed with SIGKILL while the store works, Sentinel promotes
 * a replica and points the other at it, and the store, given the {@code redis-sentinel://} URI, follows. (Down after
 * 500 ms, this Sentinel at times took the replica it had just promoted for down too, before its link to it was up,
 * and failed over a second time while that one still took writes: a second, live, primary.)
 *
 * <p>The pipeline cases drive an in-process runtime on the in-memory broker through the failover, then publish
 * every key again (a producer's retries) and count the handler's runs per key. Redis replicates asynchronously: a
 * completion the old primary acknowledged but had not yet sent to a replica is gone after the failover, and that
 * key's copy runs again. With {@code wait.replicas: 1} no call counts before a replica has the write, so nothing
 * runs twice; without it how many run twice depends on timing, so that case only reports the figure and asserts
 * that nothing was lost.
 */
class RedisSentinelFailoverTest {

    private static final String MASTER = "idem";
    private static final String PREFIX = "idem-failover:";
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final int UNIQUE = 3_000;

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void aSentinelUriFindsThePrimaryAndTheStoreFollowsItsFailoverKeepingWhatReplicasConfirmed(@TempDir Path dir)
            throws Exception {
        try (Topology redis = Topology.start(dir);
                DedupStore store = new RedisDedupStoreProvider().create(RedisDedupStoreTest.config(redis.uri(),
                        PREFIX).with("wait.replicas", 1).with("wait.timeout", "500ms")
                        .with("command-timeout", "1s"), StoreContext.system())) {
            List<ClaimRequest> before = requests("before", 20);
            List<ClaimResult> claimed = store.claim(before);
            List<CompletionRequest> completions = new ArrayList<>();
            for (int i = 0; i < before.size(); i++) {
                completions.add(new CompletionRequest(before.get(i).key(), ((Acquired) claimed.get(i)).token(),
                        RETENTION));
            }
            assertThat(store.completeAll(completions)).containsOnly(CompletionResult.COMPLETED);
            int oldPrimary = redis.primaryPort();
            try (Direct onPrimary = new Direct("redis://127.0.0.1:" + oldPrimary, PREFIX)) {
                assertThat(onPrimary.get(before.get(0).key())).as("the Sentinels named the primary").startsWith("d");
            }

            long killed = System.nanoTime();
            redis.killPrimary();
            ClaimRequest after = requests("after", 1).get(0);
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                    .until(() -> store.claim(List.of(after)).get(0) instanceof Acquired);
            Duration resumed = Duration.ofNanos(System.nanoTime() - killed);

            int newPrimary = redis.primaryPort();
            assertThat(newPrimary).isNotEqualTo(oldPrimary);
            try (Direct onPrimary = new Direct("redis://127.0.0.1:" + newPrimary, PREFIX)) {
                assertThat(onPrimary.redis.info("replication")).contains("role:master");
                assertThat(onPrimary.get(after.key())).as("the claim went to the promoted replica").startsWith("C|");
            }
            assertThat(store.claim(before)).as("completions a replica confirmed survive the failover")
                    .containsOnly(new ClaimResult.Duplicate(true));
            System.out.printf("[fault] Sentinel failover, store alone (wait.replicas 1): primary %d killed, the store"
                    + " claimed on the promoted %d after %d ms%n", oldPrimary, newPrimary, resumed.toMillis());
        }
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void withWaitForOneReplicaAFailoverMidStreamRunsNoHandlerTwiceAndLosesNothing(@TempDir Path dir)
            throws Exception {
        Result result = streamThroughAFailover(dir, 1);

        assertThat(result.lost).as("keys whose handler never ran").isZero();
        assertThat(result.reruns).as("keys whose handler ran more than once").isZero();
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void withoutWaitAFailoverMidStreamLosesNothing(@TempDir Path dir) throws Exception {
        Result result = streamThroughAFailover(dir, 0);

        // How many run twice is up to timing (what the old primary acknowledged and had not sent yet): reported only.
        assertThat(result.lost).as("keys whose handler never ran").isZero();
    }

    private record Result(int lost, long reruns) {
    }

    /**
     * Publishes {@value #UNIQUE} keys, kills the primary once a third of them were processed, waits until the
     * pipeline has settled everything, then publishes every key again and waits again; counts runs per key.
     */
    private static Result streamThroughAFailover(Path dir, int waitReplicas) throws Exception {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 50);
        try (Topology redis = Topology.start(dir)) {
            String yaml = """
                    broker: { type: memory }
                    store:
                      type: redis
                      redis:
                        uri: "%s"
                        key-prefix: "%s"
                        command-timeout: 1s
                        wait.replicas: %d
                        wait.timeout: 500ms
                    pipelines:
                      orders:
                        source: orders
                        ordering: none
                        concurrency: 8
                        lease: 3s
                    """.formatted(redis.uri(), PREFIX, waitReplicas);
            IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of())
                    .broker("memory", broker)
                    .handler("orders", (message, context) -> {
                        runs.computeIfAbsent(message.idempotencyKey().orElseThrow(), k -> new AtomicInteger())
                                .incrementAndGet();
                        Thread.sleep(1);
                    })
                    .start();
            try {
                long started = System.nanoTime();
                publishAll(broker);
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(1))
                        .until(() -> runs.size() >= UNIQUE / 3);
                int primary = redis.primaryPort();
                int ranAtKill = runs.size();
                redis.killPrimary();
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> drained(broker));
                Duration firstPass = Duration.ofNanos(System.nanoTime() - started);

                publishAll(broker);
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> drained(broker));

                int lost = UNIQUE - runs.size();
                long reruns = runs.values().stream().filter(n -> n.get() > 1).count();
                int extraRuns = runs.values().stream().mapToInt(n -> Math.max(0, n.get() - 1)).sum();
                assertThat(broker.depth("orders.DLQ")).as("dead letters").isZero();
                System.out.printf("[fault] Sentinel failover mid-stream, wait.replicas %d: %,d keys, primary %d killed"
                        + " (SIGKILL) after %,d had run, promoted %d; every key published again afterwards: lost %d,"
                        + " keys run twice %d (%d extra runs); first pass drained in %.1f s%n", waitReplicas, UNIQUE,
                        primary, ranAtKill, redis.primaryPort(), lost, reruns, extraRuns,
                        firstPass.toMillis() / 1000.0);
                return new Result(lost, reruns);
            } finally {
                runtime.stop(Duration.ofSeconds(10));
            }
        } finally {
            broker.close();
        }
    }

    private static void publishAll(InMemoryBroker broker) {
        for (int i = 0; i < UNIQUE; i++) {
            broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", "order-" + i),
                    ("order " + i).getBytes(StandardCharsets.UTF_8)));
        }
    }

    private static boolean drained(InMemoryBroker broker) {
        return broker.depth("orders") + broker.unsettled("orders") == 0;
    }

    private static List<ClaimRequest> requests(String prefix, int count) {
        List<ClaimRequest> requests = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            requests.add(new ClaimRequest(new StoreKey("orders", prefix + "-" + i), null, LEASE, Duration.ofMinutes(5)));
        }
        return requests;
    }

    /**
     * A primary, two replicas and a Sentinel watching them as {@value #MASTER}, on free loopback ports; started and
     * ready (both replicas online and known to the Sentinel) when {@link #start} returns.
     */
    private static final class Topology implements AutoCloseable {

        private final List<RedisServerProcess> servers = new ArrayList<>();
        private final Map<Integer, RedisServerProcess> byPort = new ConcurrentHashMap<>();
        private RedisServerProcess sentinel;
        private RedisClient sentinelClient;
        private StatefulRedisSentinelConnection<String, String> sentinelConnection;
        private RedisSentinelCommands<String, String> sentinels;

        static Topology start(Path dir) throws Exception {
            Path binary = RedisServerProcess.requireBinary("redis-server");
            Topology topology = new Topology();
            try {
                topology.launch(binary, dir);
                topology.awaitReplicas();
            } catch (Exception | Error e) {
                topology.close();
                throw e;
            }
            return topology;
        }

        private void launch(Path binary, Path dir) throws Exception {
            int primaryPort = RedisServerProcess.freePort();
            add(RedisServerProcess.primary(binary, primaryPort, dir), primaryPort);
            for (int i = 0; i < 2; i++) {
                int port = RedisServerProcess.freePort();
                add(RedisServerProcess.replicaOf(binary, port, dir, primaryPort), port);
            }
            sentinel = RedisServerProcess.sentinel(binary, RedisServerProcess.freePort(), dir, MASTER, primaryPort,
                    Duration.ofMillis(1500), Duration.ofSeconds(3));
            servers.add(sentinel);
            sentinel.start();
            sentinelClient = RedisClient.create("redis://127.0.0.1:" + sentinel.port());
            sentinelConnection = sentinelClient.connectSentinel();
            sentinels = sentinelConnection.sync();
        }

        private void add(RedisServerProcess server, int port) throws Exception {
            servers.add(server);
            byPort.put(port, server);
            server.start();
        }

        /** Until the primary has both replicas online and the Sentinel knows them, so it can fail over. */
        private void awaitReplicas() {
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).ignoreExceptions()
                    .until(() -> {
                        try (Direct primary = new Direct("redis://127.0.0.1:" + primaryPort())) {
                            return ReplicaWait.shortfall(primary.info(), 2).isEmpty()
                                    && sentinels.replicas(MASTER).stream()
                                            .filter(r -> r.get("flags").equals("slave")).count() == 2;
                        }
                    });
        }

        String uri() {
            return "redis-sentinel://127.0.0.1:" + sentinel.port() + "#" + MASTER;
        }

        /** The primary's port as the Sentinel names it now. */
        int primaryPort() {
            return ((InetSocketAddress) sentinels.getMasterAddrByName(MASTER)).getPort();
        }

        /** Kills the primary with SIGKILL; the Sentinel fails it over within about a second. */
        void killPrimary() throws InterruptedException {
            byPort.get(primaryPort()).kill();
        }

        @Override
        public void close() throws InterruptedException {
            try {
                if (sentinelClient != null) {
                    sentinelClient.shutdown();
                }
            } finally {
                for (RedisServerProcess server : servers) {
                    server.close();
                }
            }
        }
    }
}
