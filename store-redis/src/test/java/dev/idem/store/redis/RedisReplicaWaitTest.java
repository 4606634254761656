package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code store.redis.wait.replicas}: writes wait for replicas (a primary and a replica of the test's own, standalone,
 * no Sentinel), fail retriably when too few acknowledge or when the acknowledgement came over another connection,
 * and a claim retried after such a failure holds what the failed one took.
 */
class RedisReplicaWaitTest {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final String PREFIX = "idem-wait:";
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void withWaitReplicasEveryClaimCompletionAndFencedWriteIsOnTheReplicaWhenItsCallReturns(@TempDir Path dir)
            throws Exception {
        Path binary = RedisServerProcess.requireBinary("redis-server");
        int primaryPort = RedisServerProcess.freePort();
        try (RedisServerProcess primary = RedisServerProcess.primary(binary, primaryPort, dir);
                RedisServerProcess replica = RedisServerProcess.replicaOf(binary, RedisServerProcess.freePort(), dir,
                        primaryPort)) {
            primary.start();
            replica.start();
            try (Direct onReplica = new Direct(replica.url())) {
                await().atMost(Duration.ofSeconds(20)).until(() -> onReplica.info().contains("master_link_status:up"));
                try (RedisDedupStore store = create(primary.url(), "1", "1s", "2s")) {
                    assertThat(store.warnIfTooFewReplicas()).isEmpty();
                    List<ClaimRequest> batch = new ArrayList<>();
                    for (int i = 0; i < 50; i++) {
                        batch.add(request("order-" + i));
                    }
                    List<ClaimResult> claimed = store.claim(batch);
                    // No sleep and no retry: WAIT answered only once the replica had applied every write before it.
                    for (int i = 0; i < batch.size(); i++) {
                        long token = ((Acquired) claimed.get(i)).token();
                        assertThat(onReplica.get(batch.get(i).key())).startsWith("C|" + token + "|1|");
                    }
                    long first = token(claimed, 0);
                    assertThat(store.complete(batch.get(0).key(), first, RETENTION)).isTrue();
                    assertThat(onReplica.get(batch.get(0).key())).as("completed").startsWith("d");

                    List<CompletionRequest> completions = new ArrayList<>();
                    for (int i = 1; i < 40; i++) {
                        completions.add(new CompletionRequest(batch.get(i).key(), token(claimed, i), RETENTION));
                    }
                    assertThat(store.completeAll(completions)).containsOnly(CompletionResult.COMPLETED);
                    for (CompletionRequest completion : completions) {
                        assertThat(onReplica.get(completion.key())).as("completed").startsWith("d");
                    }

                    assertThat(store.recordStart(batch.get(40).key(), token(claimed, 40))).isEqualTo(1);
                    assertThat(onReplica.get(batch.get(40).key())).matches("C\\|" + token(claimed, 40) + "\\|1\\|\\d+\\|\\d+\\|1\\|");
                    String before = onReplica.get(batch.get(41).key());
                    assertThat(store.renew(batch.get(41).key(), token(claimed, 41), LEASE.multipliedBy(2))).isTrue();
                    assertThat(onReplica.get(batch.get(41).key())).isNotEqualTo(before);
                    assertThat(store.release(batch.get(42).key(), token(claimed, 42))).isTrue();
                    assertThat(onReplica.get(batch.get(42).key())).isNull();
                }
            }
        }
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void withTooFewReplicasWritesFailRetriablyAndTheClaimsRetryHoldsWhatTheFailedClaimTook(@TempDir Path dir)
            throws Exception {
        Path binary = RedisServerProcess.requireBinary("redis-server");
        int primaryPort = RedisServerProcess.freePort();
        try (RedisServerProcess primary = RedisServerProcess.primary(binary, primaryPort, dir);
                RedisServerProcess replica = RedisServerProcess.replicaOf(binary, RedisServerProcess.freePort(), dir,
                        primaryPort);
                Direct onPrimary = new Direct(primaryStarted(primary))) {
            try (RedisDedupStore store = create(primary.url(), "1", "200ms", "2s")) {
                assertThat(store.warnIfTooFewReplicas()).singleElement().asString()
                        .contains("has 0 replicas online, and wait.replicas is 1");
                ClaimRequest order = request("order-1");

                long started = System.nanoTime();
                assertThatThrownBy(() -> store.claim(List.of(order)))
                        .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isTrue())
                        .hasMessageContaining("took a claim of 1 key but only 0 of the 1 replicas store.redis.wait"
                                + ".replicas asks for acknowledged it within 200ms (store.redis.wait.timeout)");
                assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofMillis(1500));
                // The primary took it, under a token the caller never got.
                String taken = onPrimary.get(order.key());
                assertThat(taken).startsWith("C|");

                replica.start();
                await().atMost(Duration.ofSeconds(20)).until(() -> store.warnIfTooFewReplicas().isEmpty());
                ClaimResult again = store.claim(List.of(order)).get(0);

                // Not InProgress until that lease ends: the retry sent the same token, and holds the key.
                assertThat(again).isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
                long token = ((Acquired) again).token();
                assertThat(taken).startsWith("C|" + token + "|1|");
                // Taken once: a later claim of the key finds it in progress.
                assertThat(store.claim(List.of(order)).get(0)).isInstanceOf(InProgress.class);

                replica.stop();
                await().atMost(Duration.ofSeconds(20)).until(() -> !store.warnIfTooFewReplicas().isEmpty());
                assertThatThrownBy(() -> store.complete(order.key(), token, RETENTION))
                        .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isTrue())
                        .hasMessageContaining("took a complete of key 'order-1' in namespace 'orders' but only 0 of"
                                + " the 1 replicas");
                assertThatThrownBy(() -> store.completeAll(List.of(new CompletionRequest(order.key(), token,
                        RETENTION)))).isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable())
                        .isTrue());

                replica.start();
                await().atMost(Duration.ofSeconds(20)).until(() -> store.warnIfTooFewReplicas().isEmpty());
                // The same completion again, as the runtime sends it: it lands, once.
                assertThat(store.complete(order.key(), token, RETENTION)).isTrue();
                assertThat(store.claim(List.of(order)).get(0)).isEqualTo(new ClaimResult.Duplicate(true));
            }
        }
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void aWriteWhoseWaitIsCutOffByALostConnectionFailsRetriablyAndGoesThroughWhenTriedAgain(@TempDir Path dir)
            throws Exception {
        Path binary = RedisServerProcess.requireBinary("redis-server");
        int primaryPort = RedisServerProcess.freePort();
        try (RedisServerProcess primary = RedisServerProcess.primary(binary, primaryPort, dir);
                RedisServerProcess replica = RedisServerProcess.replicaOf(binary, RedisServerProcess.freePort(), dir,
                        primaryPort);
                Direct onPrimary = new Direct(primaryStarted(primary))) {
            replica.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> ReplicaWait.shortfall(onPrimary.info(), 1).isEmpty());
            try (RedisDedupStore store = create(primary.url(), "1", "3s", "5s")) {
                ClaimRequest order = request("order-1");
                long token = token(store.claim(List.of(order)), 0);

                // The replica stops acknowledging: the completion's WAIT blocks on the primary.
                replica.signal("STOP");
                try {
                    CompletableFuture<Boolean> completion = CompletableFuture.supplyAsync(
                            () -> store.complete(order.key(), token, RETENTION));
                    await().atMost(Duration.ofSeconds(2)).pollInterval(Duration.ofMillis(5))
                            .until(() -> onPrimary.clientBlockedInWait() != null);
                    onPrimary.redis.clientKill(KillArgs.Builder.id(Long.parseLong(onPrimary.clientBlockedInWait())));

                    assertThat(completion).failsWithin(Duration.ofSeconds(10)).withThrowableThat()
                            .havingCause().isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable())
                                    .isTrue());
                } finally {
                    replica.signal("CONT");
                }
                // The runtime sends the same completion again: once the replica answers, it goes through.
                await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
                        .until(() -> store.complete(order.key(), token, RETENTION));
            }
        }
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void aWaitAnsweredOverALaterConnectionThanItsWritesConfirmsNothing(@TempDir Path dir) throws Exception {
        Path binary = RedisServerProcess.requireBinary("redis-server");
        int primaryPort = RedisServerProcess.freePort();
        try (RedisServerProcess primary = RedisServerProcess.primary(binary, primaryPort, dir);
                RedisServerProcess replica = RedisServerProcess.replicaOf(binary, RedisServerProcess.freePort(), dir,
                        primaryPort);
                Direct onPrimary = new Direct(primaryStarted(primary))) {
            replica.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> ReplicaWait.shortfall(onPrimary.info(), 1).isEmpty());
            try (RedisDedupStore store = create(primary.url(), "1", "1s", "2s")) {
                // What a write sends behind it, taken before the write as the store takes it; then the store's
                // connection is lost and made again, as in a failover between a write and its WAIT.
                Supplier<CompletableFuture<Long>> behind = store.replicated();
                onPrimary.redis.clientKill(KillArgs.Builder.typeNormal().skipme());
                await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).ignoreExceptions()
                        .untilAsserted(store::checkHealth);

                // The replica acknowledges the WAIT, which covers no write of the lost connection: refused.
                assertThat(behind.get()).failsWithin(Duration.ofSeconds(5)).withThrowableThat()
                        .havingRootCause().isInstanceOfSatisfying(ReplicaWait.NotReplicated.class,
                                e -> assertThat(e.reconnected).isTrue());
                // Taken after the reconnection, it confirms.
                assertThat(store.replicated().get()).succeedsWithin(Duration.ofSeconds(5)).isEqualTo(1L);
            }
        }
    }

    @Test
    void shortfallCountsTheReplicasOnlineAndSeesAReplica() {
        String online = "slave0:ip=127.0.0.1,port=6380,state=online,offset=42,lag=0\r\n";
        String loading = "slave1:ip=127.0.0.1,port=6381,state=wait_bgsave,offset=0,lag=0\r\n";
        assertThat(ReplicaWait.shortfall("# Replication\r\nrole:master\r\nconnected_slaves:1\r\n" + online, 1))
                .isEmpty();
        assertThat(ReplicaWait.shortfall("# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" + online
                + loading, 2)).hasValue("has 1 replica online");
        assertThat(ReplicaWait.shortfall("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n", 1))
                .hasValue("has 0 replicas online");
        assertThat(ReplicaWait.shortfall("# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\n", 1))
                .hasValue("is a replica, not the primary");
        assertThat(ReplicaWait.shortfall("", 1)).as("a reply without the fields: not checked").isEmpty();
    }

    static RedisDedupStore create(String url, String replicas, String waitTimeout, String commandTimeout) {
        return (RedisDedupStore) PROVIDER.create(RedisDedupStoreTest.config(url, PREFIX)
                .with("wait.replicas", replicas).with("wait.timeout", waitTimeout)
                .with("command-timeout", commandTimeout), StoreContext.system());
    }

    private static String primaryStarted(RedisServerProcess primary) throws Exception {
        primary.start();
        return primary.url();
    }

    private static ClaimRequest request(String id) {
        return new ClaimRequest(new StoreKey("orders", id), null, LEASE, Duration.ofMinutes(5));
    }

    private static long token(List<ClaimResult> results, int i) {
        return ((Acquired) results.get(i)).token();
    }

    /** A plain client of one server: reads what the store wrote there. */
    static final class Direct implements AutoCloseable {

        private final RedisClient client;
        private final StatefulRedisConnection<String, String> connection;
        private final RedisKeys keys;
        final RedisCommands<String, String> redis;

        /** For a store with this class's key prefix. */
        Direct(String url) {
            this(url, PREFIX);
        }

        Direct(String url, String keyPrefix) {
            client = RedisClient.create(url);
            connection = client.connect();
            redis = connection.sync();
            keys = new RedisKeys(keyPrefix);
        }

        String get(StoreKey key) {
            return redis.get(new String(keys.encode(key), StandardCharsets.UTF_8));
        }

        String info() {
            return redis.info("replication");
        }

        /** The ID of a client blocked in {@code WAIT}, or {@code null}. */
        String clientBlockedInWait() {
            for (String line : redis.clientList().split("\n")) {
                if (line.contains(" cmd=wait ") && line.contains(" flags=b ")) {
                    return line.substring(3, line.indexOf(' '));
                }
            }
            return null;
        }

        @Override
        public void close() {
            connection.close();
            client.shutdown();
        }
    }
}
