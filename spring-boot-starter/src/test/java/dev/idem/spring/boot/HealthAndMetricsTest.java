package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.actuate.health.CompositeHealth;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthComponent;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Plain mode on the real Redis: the runtime's meters land on the application's registry, and Actuator's {@code idem}
 * contributor and the readiness group show a pipeline whose broker stopped answering as down.
 */
@SpringBootTest(classes = HealthAndMetricsTest.App.class, properties = {
        "idem.broker.type=memory",
        "idem.store.type=redis",
        "idem.store.redis.key-prefix=idem-spring-test:",
        "idem.pipelines.payments.source=payments",
        "idem.pipelines.refunds.source=refunds",
        "idem.runtime.summary-interval=0s",
        "management.endpoint.health.show-details=always",
        "management.endpoint.health.group.readiness.include=idem"})
class HealthAndMetricsTest {

    static final FlakyBroker BROKER = new FlakyBroker();
    static final Set<String> HANDLED = ConcurrentHashMap.newKeySet();

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        String url = TestServices.redis();
        registry.add("idem.store.redis.uri", () -> url);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration(excludeName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
    static class App {
        @Bean
        IdemBuilderCustomizer flakyBroker() {
            return builder -> builder.broker("memory", BROKER);
        }

        @Bean
        @IdemHandler("payments")
        MessageHandler payments() {
            return (Message message, HandlerContext context) -> HANDLED.add(message.idempotencyKey().orElseThrow());
        }

        @Bean
        @IdemHandler("refunds")
        MessageHandler refunds() {
            return (message, context) -> { };
        }
    }

    @Autowired
    MeterRegistry registry;

    @Autowired
    HealthEndpoint health;

    @AfterEach
    void brokerBack() {
        BROKER.down = false;
    }

    @Test
    void theRuntimesMetersAreOnTheApplicationsRegistry() {
        String id = "pay-" + UUID.randomUUID();
        TestServices.publish(BROKER.broker, "payments", id, "{}");

        await().atMost(Duration.ofSeconds(15)).until(() -> HANDLED.contains(id));
        await().atMost(Duration.ofSeconds(5)).until(() -> BROKER.broker.unsettled("payments") == 0);
        Timer handler = registry.find("idem.handler.duration").tag("pipeline", "payments").timer();
        assertThat(handler).isNotNull();
        assertThat(handler.count()).isGreaterThanOrEqualTo(1);
        assertThat(registry.find("idem.inflight").tag("pipeline", "refunds").gauge()).isNotNull();
    }

    @Test
    void eachPipelineIsUpWhileItsBrokerAndStoreAnswer() {
        HealthComponent idem = health.healthForPath("idem");

        assertThat(idem.getStatus()).isEqualTo(Status.UP);
        assertThat(((CompositeHealth) idem).getComponents()).containsOnlyKeys("payments", "refunds");
        assertThat(((Health) health.healthForPath("idem", "payments")).getDetails())
                .containsAllEntriesOf(Map.of("broker", "up", "store", "up", "pipeline", "running"))
                .containsKey("inFlight");
        assertThat(health.healthForPath("readiness").getStatus()).isEqualTo(Status.UP);
    }

    @Test
    void anUnreachableBrokerIsDownInTheContributorAndTheReadinessGroup() {
        BROKER.down = true;

        HealthComponent payments = health.healthForPath("idem", "payments");
        assertThat(payments.getStatus()).isEqualTo(Status.DOWN);
        assertThat(((Health) payments).getDetails())
                .containsEntry("broker", "down: Connection refused: broker unreachable")
                .containsEntry("store", "up");
        assertThat(health.healthForPath("idem").getStatus()).isEqualTo(Status.DOWN);
        assertThat(health.healthForPath("readiness").getStatus()).isEqualTo(Status.DOWN);
    }
}
