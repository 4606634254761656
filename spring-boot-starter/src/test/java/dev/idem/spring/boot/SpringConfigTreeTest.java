package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.plugin.PluginRegistry;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

class SpringConfigTreeTest {

    private final StandardEnvironment environment = new StandardEnvironment();

    private Map<String, Object> tree(Map<String, Object> properties, Map<String, Object> envVariables) {
        environment.getPropertySources().remove(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME);
        environment.getPropertySources().remove(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME);
        environment.getPropertySources().addLast(new SystemEnvironmentPropertySource(
                StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, envVariables));
        environment.getPropertySources().addLast(new MapPropertySource("application.yaml", properties));
        return new SpringConfigTree(environment, PluginRegistry.discover(List.of(getClass().getClassLoader()))).tree();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> section(Map<String, Object> tree, String name) {
        return (Map<String, Object>) tree.get(name);
    }

    private static Map<String, Object> map(Object... pairs) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }

    @Test
    void propertiesBecomeTheSectionsOfIdemYamlWithFlatKeysAndListsOfExtractors() {
        Map<String, Object> tree = tree(map(
                "idem.broker.type", "rabbitmq",
                "idem.broker.rabbitmq.uri", "amqp://localhost",
                "idem.store.type", "redis",
                "idem.store.redis.uri", "redis://localhost:6379",
                "idem.pipelines.orders.source", "orders",
                "idem.pipelines.orders.retry.max-attempts", 5,
                "idem.pipelines.orders.transactional", true,
                "idem.pipelines.orders.transactional.group", 10,
                "idem.pipelines.orders.id[0].type", "json-pointer",
                "idem.pipelines.orders.id[0].pointer", "/orderId",
                "idem.pipelines.orders.id[1].type", "header",
                "idem.pipelines.orders.handler-settings[db.url]", "jdbc:x",
                "idem.runtime.shutdown-timeout", "20s",
                "idem.enabled", true), Map.of());

        assertThat(tree).containsOnlyKeys("broker", "store", "pipelines", "runtime");
        assertThat(tree.get("broker")).isEqualTo(map("type", "rabbitmq", "rabbitmq", map("uri", "amqp://localhost")));
        Map<String, Object> orders = section(section(tree, "pipelines"), "orders");
        assertThat(orders).isEqualTo(map("source", "orders", "retry.max-attempts", "5", "transactional", "true",
                "transactional.group", "10",
                "id", List.of(map("type", "json-pointer", "pointer", "/orderId"), map("type", "header")),
                "handler-settings.db.url", "jdbc:x"));
        assertThat(tree.get("runtime")).isEqualTo(map("shutdown-timeout", "20s"));
    }

    @Test
    void theStoresKeyDigestIsReadBesideItsTypeFromAPropertyOrAnEnvironmentVariable() {
        assertThat(tree(map("idem.store.type", "redis", "idem.store.key-digest", "sha256-128"), Map.of())
                .get("store")).isEqualTo(map("type", "redis", "key-digest", "sha256-128"));
        assertThat(tree(map("idem.store.type", "redis"), map("IDEM_STORE_KEYDIGEST", "sha256-128"))
                .get("store")).isEqualTo(map("type", "redis", "key-digest", "sha256-128"));
    }

    @Test
    void anEnvironmentVariableOverridesTheKeyItMatchesWhateverItsDashes() {
        Map<String, Object> tree = tree(map(
                "idem.pipelines.order-events.source", "events",
                "idem.pipelines.order-events.max-in-flight", 100),
                map("IDEM_PIPELINES_ORDEREVENTS_MAXINFLIGHT", "7", "IDEM_PIPELINES_ORDEREVENTS_RETRY_MAXATTEMPTS", "2"));

        @SuppressWarnings("unchecked")
        Map<String, Object> pipelines = (Map<String, Object>) tree.get("pipelines");
        assertThat(pipelines).containsOnlyKeys("order-events");
        assertThat(section(pipelines, "order-events"))
                .containsEntry("source", "events")
                .containsEntry("max-in-flight", "7")
                .containsEntry("retry.max-attempts", "2")
                .hasSize(3);
    }

    @Test
    void aListComesWholeFromTheFirstSourceThatSetsIt() {
        Map<String, Object> tree = tree(map(
                "idem.pipelines.orders.id[0].type", "json-pointer",
                "idem.pipelines.orders.id[0].pointer", "/orderId",
                "idem.pipelines.orders.id[1].type", "header"),
                map("IDEM_PIPELINES_ORDERS_ID_0_TYPE", "header", "IDEM_PIPELINES_ORDERS_ID_0_NAME", "x-id"));

        Map<String, Object> orders = section(section(tree, "pipelines"), "orders");
        assertThat(orders.get("id")).isEqualTo(List.of(map("type", "header", "name", "x-id")));
    }

    @Test
    void springResolvesItsPlaceholdersAndWhatIsLeftIsLiteralForIdem() {
        Map<String, Object> tree = tree(map(
                "queue.name", "orders-in",
                "idem.pipelines.orders.source", "${queue.name}",
                "idem.pipelines.orders.dead-letter", "${missing:dlq}",
                "idem.pipelines.orders.lease", ""), Map.of());

        Map<String, Object> orders = section(section(tree, "pipelines"), "orders");
        assertThat(orders).containsEntry("source", "orders-in").containsEntry("dead-letter", "dlq")
                .containsEntry("lease", null);
        assertThat(SpringConfigTree.yaml(map("a", "$${X}"))).isEqualTo("{\"a\":\"$${X}\"}");
    }

    @Test
    void aJdbcStoreWithoutUrlTakesTheApplicationsDataSource() {
        Map<String, Object> tree = tree(map(
                "spring.datasource.url", "jdbc:postgresql://db/app",
                "spring.datasource.username", "app",
                "idem.store.type", "jdbc"), Map.of());

        assertThat(tree.get("store")).isEqualTo(map("type", "jdbc",
                "jdbc", map("url", "jdbc:postgresql://db/app", "username", "app")));
    }
}
