package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redis goes away in the middle of a stream of claims and comes back: on a {@code redis-server} of the test's
 * own, stopped and started again on the same port.
 */
class RedisOutageTest {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void whileRedisIsDownEveryCallFailsRetriablyAndOnceItIsBackTheStoreWorksAgain(@TempDir Path dir)
            throws Exception {
        int port = RedisServerProcess.freePort();
        String endpoint = "redis://127.0.0.1:" + port;
        try (RedisServerProcess redis = new RedisServerProcess(RedisServerProcess.requireBinary("redis-server"),
                port, dir)) {
            redis.start();
            try (DedupStore store = PROVIDER.create(RedisDedupStoreTest.config(endpoint, "idem:")
                    .with("command-timeout", "2s"), StoreContext.system())) {
                List<Acquired> before = claimAndCompleteBatch(store, "before", 0);
                Acquired inFlight = (Acquired) store.claim(List.of(request("in-flight"))).get(0);

                redis.stop();

                StoreKey lost = new StoreKey("orders", "before-0");
                for (ThrowingCallable call : List.<ThrowingCallable>of(
                        () -> store.claim(List.of(request("during-0"), request("during-1"))),
                        () -> store.complete(new StoreKey("orders", "in-flight"), inFlight.token(), RETENTION),
                        () -> store.completeAll(List.of(new CompletionRequest(new StoreKey("orders", "in-flight"),
                                inFlight.token(), RETENTION))),
                        () -> store.release(lost, before.get(0).token()),
                        () -> store.renew(lost, before.get(0).token(), LEASE),
                        store::checkHealth)) {
                    assertThatThrownBy(call)
                            .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isTrue())
                            .hasMessageContaining(endpoint);
                }

                redis.start();

                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                        .untilAsserted(store::checkHealth);
                claimAndCompleteBatch(store, "after", 0);
                // This Redis keeps nothing on disk: what was stored before is gone, and the tokens from
                // before are nobody's now.
                assertThat(store.complete(new StoreKey("orders", "in-flight"), inFlight.token(), RETENTION)).isFalse();
                assertThat(store.claim(List.of(request("before-0"))).get(0)).isInstanceOf(Acquired.class);
            }
        }
    }

    private static List<Acquired> claimAndCompleteBatch(DedupStore store, String prefix, int from) {
        List<ClaimRequest> batch = new ArrayList<>();
        for (int i = from; i < from + 20; i++) {
            batch.add(request(prefix + "-" + i));
        }
        List<Acquired> owners = new ArrayList<>();
        List<ClaimResult> results = store.claim(batch);
        for (int i = 0; i < batch.size(); i++) {
            assertThat(results.get(i)).isInstanceOf(Acquired.class);
            Acquired owner = (Acquired) results.get(i);
            owners.add(owner);
            assertThat(store.complete(batch.get(i).key(), owner.token(), RETENTION)).isTrue();
        }
        assertThat(store.claim(batch)).containsOnly(new Duplicate(true));
        return owners;
    }

    private static ClaimRequest request(String id) {
        return new ClaimRequest(new StoreKey("orders", id), null, LEASE, Duration.ofMinutes(5));
    }
}
