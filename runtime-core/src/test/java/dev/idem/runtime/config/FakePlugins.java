package dev.idem.runtime.config;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.Secret;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/** A hand-built {@link PluginSpecs} standing in for discovered plugins. */
final class FakePlugins implements PluginSpecs {

    static final ConfigKey<String> AMQ_URL = ConfigKey.string("url").required().doc("The broker URL.");
    static final ConfigKey<String> AMQ_USER = ConfigKey.string("user").defaultValue("admin").doc("The user.");
    static final ConfigKey<Secret> AMQ_PASSWORD = ConfigKey.secret("password").doc("The password.");
    static final ConfigKey<Integer> AMQ_PREFETCH = ConfigKey.integer("prefetch").defaultValue(100).atLeast(1)
            .doc("Messages fetched ahead.");
    static final ConfigKey<Boolean> AMQ_PERSISTENT = ConfigKey.bool("persistent").defaultValue(true)
            .doc("Whether the embedded broker persists.");
    static final ConfigKey<Map<String, String>> AMQ_CLIENT = ConfigKey.map("client").doc("Native client settings.");

    static final ConfigKey<List<String>> KAFKA_SERVERS = ConfigKey.list("bootstrap-servers").required()
            .doc("The Kafka brokers.");

    static final ConfigKey<Long> CAFFEINE_MAX = ConfigKey.longValue("maximum-size").defaultValue(100_000L)
            .atLeast(1L).doc("Keys kept at most.");

    static final ConfigKey<String> JDBC_URL = ConfigKey.string("url").required().doc("The JDBC URL.");
    static final ConfigKey<Secret> JDBC_PASSWORD = ConfigKey.secret("password").doc("The password.");

    static final ConfigKey<String> REDIS_URL = ConfigKey.string("url").defaultValue("redis://localhost:6379")
            .doc("The Redis URL.");
    static final ConfigKey<Secret> REDIS_PASSWORD = ConfigKey.secret("password").required().doc("The password.");

    static final ConfigKey<String> HEADER_NAME = ConfigKey.string("name").required().doc("The header.");
    static final ConfigKey<String> POINTER = ConfigKey.string("pointer").required()
            .validate(p -> p.startsWith("/"), "start with /").doc("A JSON pointer.");

    private final Map<Kind, Map<String, ConfigSpec>> specs = new EnumMap<>(Kind.class);

    /** activemq, kafka; caffeine, jdbc, redis; header, json-pointer. */
    static FakePlugins standard() {
        return new FakePlugins()
                .with(Kind.BROKER, "activemq", AMQ_URL, AMQ_USER, AMQ_PASSWORD, AMQ_PREFETCH, AMQ_PERSISTENT, AMQ_CLIENT)
                .with(Kind.BROKER, "kafka", KAFKA_SERVERS)
                .with(Kind.STORE, "caffeine", CAFFEINE_MAX)
                .with(Kind.STORE, "jdbc", JDBC_URL, JDBC_PASSWORD)
                .with(Kind.STORE, "redis", REDIS_URL, REDIS_PASSWORD)
                .with(Kind.ID_EXTRACTOR, "header", HEADER_NAME)
                .with(Kind.ID_EXTRACTOR, "json-pointer", POINTER);
    }

    FakePlugins with(Kind kind, String id, ConfigKey<?>... keys) {
        ConfigSpec.Builder spec = ConfigSpec.builder();
        for (ConfigKey<?> key : keys) {
            spec.define(key);
        }
        specs.computeIfAbsent(kind, k -> new TreeMap<>()).put(id, spec.build());
        return this;
    }

    FakePlugins without(Kind kind, String id) {
        specs.getOrDefault(kind, new TreeMap<>()).remove(id);
        return this;
    }

    @Override
    public Optional<ConfigSpec> spec(Kind kind, String id) {
        return Optional.ofNullable(specs.getOrDefault(kind, Map.of()).get(id));
    }

    @Override
    public SortedSet<String> ids(Kind kind) {
        return new TreeSet<>(specs.getOrDefault(kind, Map.of()).keySet());
    }
}
