package dev.idem.store.redis;

import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * A Redis container for machines without a local Redis; its own class, so that Testcontainers is loaded only
 * when a container is really needed. Testcontainers removes the container when the JVM exits.
 */
final class RedisContainer {

    private static GenericContainer<?> container;

    private RedisContainer() {
    }

    @SuppressWarnings("resource")
    static synchronized String start() {
        if (container == null) {
            GenericContainer<?> redis = new GenericContainer<>(DockerImageName.parse("redis:7-alpine"))
                    .withExposedPorts(6379);
            redis.start();
            container = redis;
        }
        return "redis://" + container.getHost() + ":" + container.getMappedPort(6379);
    }
}
