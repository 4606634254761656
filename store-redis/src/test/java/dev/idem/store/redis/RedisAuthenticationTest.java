package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import static io.lettuce.core.protocol.CommandType.DEL;
import static io.lettuce.core.protocol.CommandType.EVAL;
import static io.lettuce.core.protocol.CommandType.EVALSHA;
import static io.lettuce.core.protocol.CommandType.GET;
import static io.lettuce.core.protocol.CommandType.PING;
import static io.lettuce.core.protocol.CommandType.SCRIPT;
import static io.lettuce.core.protocol.CommandType.SET;
import static io.lettuce.core.protocol.CommandType.TIME;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.TestPluginConfig;
import io.lettuce.core.AclSetuserArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Passwords and ACL users, on a {@code redis-server} of the test's own that requires a password. */
class RedisAuthenticationTest {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();
    private static final String PASSWORD = "default-s3cret";

    @TempDir
    static Path dir;
    private static RedisServerProcess redis;

    @BeforeAll
    static void startRedisWithAPasswordAndAnAclUser() throws Exception {
        redis = new RedisServerProcess(RedisServerProcess.requireBinary("redis-server"), RedisServerProcess.freePort(),
                dir, "--requirepass", PASSWORD);
        redis.start();
        RedisURI uri = RedisURI.create(redis.url());
        uri.setAuthentication(PASSWORD.toCharArray());
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> admin = client.connect()) {
            // Just the commands the provider documents, on keys under the prefix.
            admin.sync().aclSetuser("idem", AclSetuserArgs.Builder.on().addPassword("idem-s3cret")
                    .keyPattern("idem:*")
                    .addCommand(GET).addCommand(SET).addCommand(DEL).addCommand(TIME).addCommand(PING)
                    .addCommand(EVALSHA).addCommand(EVAL).addCommand(SCRIPT));
        } finally {
            client.shutdown();
        }
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    private static TestPluginConfig config() {
        return RedisDedupStoreTest.config(redis.url(), "idem:").with("command-timeout", "1s");
    }

    @Test
    void passwordFromConfigurationAuthenticatesTheDefaultUser() {
        try (DedupStore store = PROVIDER.create(config().with("password", PASSWORD), StoreContext.system())) {
            claimAndComplete(store, "default-user");
        }
    }

    @Test
    void aclUserWithTheDocumentedCommandsCanUseTheStore() {
        try (DedupStore store = PROVIDER.create(config().with("username", "idem").with("password", "idem-s3cret"),
                StoreContext.system())) {
            claimAndComplete(store, "acl-user");
        }
    }

    @Test
    void missingPasswordIsANonRetriableErrorPointingAtThePasswordKey() {
        assertThatThrownBy(() -> PROVIDER.create(config(), StoreContext.system()))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("NOAUTH")
                .hasMessageContaining("store.redis.password");
    }

    @Test
    void wrongPasswordIsANonRetriableErrorThatNeverShowsThePassword() {
        assertThatThrownBy(() -> PROVIDER.create(config().with("password", "wrong-s3cret"), StoreContext.system()))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isFalse())
                .hasMessageContaining("WRONGPASS")
                .hasMessageContaining("Check store.redis.username and store.redis.password")
                .message().doesNotContain("wrong-s3cret");
    }

    private static void claimAndComplete(DedupStore store, String id) {
        StoreKey key = new StoreKey("orders", id);
        Acquired owner = (Acquired) store.claim(List.of(new ClaimRequest(key, null, Duration.ofSeconds(30),
                Duration.ofMinutes(5)))).get(0);
        assertThat(store.complete(key, owner.token(), Duration.ofHours(1))).isTrue();
    }
}
