package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.testkit.TestPluginConfig;
import java.time.Duration;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The provider without a server: discovery, declared keys, validation, and an unreachable server. */
class RedisDedupStoreProviderTest {

    private static final RedisDedupStoreProvider PROVIDER = new RedisDedupStoreProvider();

    private static TestPluginConfig defaults() {
        return TestPluginConfig.defaults("store.redis", PROVIDER.configSpec());
    }

    @Test
    void providerIsFoundByServiceLoaderWithIdRedis() {
        List<DedupStoreProvider> found = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.id().equals("redis"))
                .toList();

        assertThat(found).singleElement().isInstanceOf(RedisDedupStoreProvider.class);
    }

    @Test
    void providerDeclaresEachKeyOnceWithDefaultsAndDocs() {
        var spec = PROVIDER.configSpec();

        assertThat(spec.names()).containsExactly("uri", "username", "password", "key-prefix", "command-timeout",
                "cluster", "tls.verify-peer", "tls.ca-certificates", "wait.replicas", "wait.timeout", "pack-completed");
        assertThat(spec.key("pack-completed").defaultValue()).isEqualTo(false);
        assertThat(spec.key("uri").defaultValue()).isEqualTo("redis://127.0.0.1:6379");
        assertThat(spec.key("key-prefix").defaultValue()).isEqualTo("idem:");
        assertThat(spec.key("command-timeout").defaultValue()).isEqualTo(Duration.ofSeconds(2));
        assertThat(spec.key("cluster").defaultValue()).isEqualTo(false);
        assertThat(spec.key("tls.verify-peer").defaultValue()).isEqualTo(true);
        assertThat(spec.key("wait.replicas").defaultValue()).isEqualTo(0);
        assertThat(spec.key("wait.timeout").defaultValue()).isEqualTo(Duration.ofSeconds(1));
        assertThat(spec.key("password").type()).isEqualTo(ConfigKey.Type.SECRET);
        assertThat(spec.key("password").defaultValue()).isNull();
        assertThat(spec.keys()).allSatisfy(key -> assertThat(key.doc()).isNotBlank());
    }

    @Test
    void passwordIsMaskedWhereverTheConfigurationIsPrinted() {
        var config = defaults().with("password", "s3cret-pw");

        assertThat(config.get(RedisDedupStoreProvider.PASSWORD).reveal()).isEqualTo("s3cret-pw");
        assertThat(config.get(RedisDedupStoreProvider.PASSWORD)).hasToString("******");
        assertThat(RedisDedupStoreProvider.PASSWORD.format(config.get(RedisDedupStoreProvider.PASSWORD)))
                .isEqualTo("******");
        assertThat(config.toString()).doesNotContain("s3cret-pw");
    }

    @Test
    void passwordInTheUriIsMaskedInMessages() {
        assertThat(RedisDedupStoreProvider.withoutPassword("redis://idem:s3cret@cache:6379/2"))
                .isEqualTo("redis://idem:******@cache:6379/2");
        assertThat(RedisDedupStoreProvider.withoutPassword("rediss://s3cret@cache:6380"))
                .isEqualTo("rediss://******@cache:6380");
        assertThat(RedisDedupStoreProvider.withoutPassword("redis-sentinel://s3cret@h1:26379,h2:26379#primary"))
                .isEqualTo("redis-sentinel://******@h1:26379,h2:26379#primary");
        assertThat(RedisDedupStoreProvider.withoutPassword("redis://cache:6379")).isEqualTo("redis://cache:6379");
    }

    @Test
    void invalidValuesAreRejectedSayingWhatIsAccepted() {
        assertThatThrownBy(() -> defaults().with("uri", "http://cache:6379"))
                .hasMessageStartingWith("Invalid value 'http://cache:6379' for store.redis.uri: must be a Redis URI");
        assertThatThrownBy(() -> defaults().with("key-prefix", ""))
                .hasMessage("Invalid value '' for store.redis.key-prefix: must not be empty");
        assertThatThrownBy(() -> defaults().with("command-timeout", "0"))
                .hasMessage("Invalid value '0' for store.redis.command-timeout: must be at least 1ms");
        assertThatThrownBy(() -> defaults().with("wait.replicas", "-1"))
                .hasMessage("Invalid value '-1' for store.redis.wait.replicas: must be at least 0");
        assertThatThrownBy(() -> defaults().with("wait.timeout", "0"))
                .hasMessage("Invalid value '0' for store.redis.wait.timeout: must be at least 1ms");
    }

    @Test
    void waitingForReplicasIsRefusedInClusterModeAndForAsLongAsTheCommandTimeout() {
        assertThat(PROVIDER.validate(defaults().with("uri", "redis://127.0.0.1:1").with("wait.replicas", 1)
                .with("cluster", true))).singleElement().extracting(ConfigProblem::message)
                .isEqualTo("store.redis.wait.replicas is 1 but store.redis.cluster is true: waiting for replicas works"
                        + " with one primary (standalone or Sentinel), not with a Redis Cluster, whose batches write to"
                        + " several; set it to 0");
        assertThat(PROVIDER.validate(defaults().with("uri", "redis://127.0.0.1:1").with("wait.replicas", 2)
                .with("wait.timeout", "2s"))).singleElement().extracting(ConfigProblem::message)
                .isEqualTo("store.redis.wait.timeout (2s) must be less than store.redis.command-timeout (2s): a write"
                        + " waiting for its replicas holds the store's one connection, and the calls behind it would"
                        + " time out first; lower it or raise command-timeout");
        assertThatThrownBy(() -> PROVIDER.create(defaults().with("wait.replicas", 1).with("command-timeout", "500ms"),
                StoreContext.system()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("store.redis.wait.timeout (1s) must be less than store.redis.command-timeout");
        // Without waiting, neither matters.
        assertThat(PROVIDER.validate(defaults().with("uri", "redis://127.0.0.1:1").with("cluster", true)
                .with("wait.timeout", "5s"))).isEmpty();
        assertThat(PROVIDER.validate(defaults().with("uri", "redis-sentinel://127.0.0.1:1#primary")
                .with("wait.replicas", 1).with("wait.timeout", "250ms"))).isEmpty();
    }

    @Test
    void keysThatContradictEachOtherStopTheStartBeforeConnecting() {
        assertThatThrownBy(() -> PROVIDER.create(defaults().with("cluster", true)
                        .with("uri", "redis-sentinel://127.0.0.1:26379#primary"), StoreContext.system()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("store.redis.cluster is true but store.redis.uri 'redis-sentinel://127.0.0.1:26379#primary' names Sentinels");
        assertThatThrownBy(() -> PROVIDER.create(defaults().with("username", "idem"), StoreContext.system()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("store.redis.username is set but store.redis.password is not");
        assertThatThrownBy(() -> PROVIDER.create(defaults().with("tls.ca-certificates", "/etc/ssl/ca.pem"),
                        StoreContext.system()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("store.redis.tls.ca-certificates is set but store.redis.uri "
                        + "'redis://127.0.0.1:6379' does not use TLS");
        assertThatThrownBy(() -> PROVIDER.create(defaults().with("uri", "rediss://127.0.0.1:6380")
                        .with("tls.ca-certificates", "/no/such/ca.pem"), StoreContext.system()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("Invalid value '/no/such/ca.pem' for store.redis.tls.ca-certificates");
    }

    @Test
    void validateReportsEveryContradictionWithItsPathWithoutConnecting() {
        // Nothing listens on port 1: a validate that connected would fail differently.
        assertThat(PROVIDER.validate(defaults().with("uri", "redis-sentinel://127.0.0.1:1#primary").with("cluster", true)
                .with("username", "idem"))).extracting(ConfigProblem::path)
                .containsExactly("store.redis.cluster", "store.redis.username");
        assertThat(PROVIDER.validate(defaults().with("uri", "redis://127.0.0.1:1")
                .with("tls.ca-certificates", "/etc/ssl/ca.pem"))).singleElement().extracting(ConfigProblem::message)
                .isEqualTo("store.redis.tls.ca-certificates is set but store.redis.uri 'redis://127.0.0.1:1' does not"
                        + " use TLS: write rediss:// to use it");
        assertThat(PROVIDER.validate(defaults().with("uri", "redis://127.0.0.1:1"))).isEmpty();
    }

    @Test
    void unreachableServerIsARetriableStoreErrorNamingTheUriWithoutItsPassword() {
        int port = RedisServerProcess.freePort();
        var config = defaults().with("uri", "redis://idem:s3cret@127.0.0.1:" + port).with("command-timeout", "1s");

        assertThatThrownBy(() -> PROVIDER.create(config, StoreContext.system()))
                .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.retriable()).isTrue())
                .hasMessageStartingWith("Cannot reach Redis at redis://idem:******@127.0.0.1:" + port
                        + " for the first connection")
                .hasMessageContaining("store.redis.uri")
                .message().doesNotContain("s3cret");
    }
}
