package com.example.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.testkit.ExternalService;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The application against the real RabbitMQ and PostgreSQL: an order published twice is recorded once, an order
 * without an amount is not recorded, and {@code GET /orders} lists what was processed.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "idem.pipelines.orders.source=spring-orders-example",
        "idem.pipelines.orders.retry.initial-backoff=10ms",
        "idem.runtime.summary-interval=0s"})
class OrdersApplicationTest {

    static String rabbitmq;

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        String postgres = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start PostgreSQL with a database 'test'.", null);
        rabbitmq = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2F", "Start RabbitMQ with the guest user.", null);
        registry.add("spring.datasource.url", () -> postgres);
        registry.add("idem.broker.rabbitmq.uri", () -> rabbitmq);
    }

    @Autowired
    TestRestTemplate http;

    @Test
    void anOrderPublishedTwiceIsRecordedOnceAndListed() throws Exception {
        String first = "order-" + UUID.randomUUID();
        String second = "order-" + UUID.randomUUID();
        String empty = "order-" + UUID.randomUUID();
        publish(first, 1250, first, 1250, second, 300, empty, 0);

        await().atMost(Duration.ofSeconds(20)).until(() -> ids().containsAll(List.of(first, second)));
        // the order without an amount is retried, then dead-lettered; meanwhile the duplicate was acked unrun
        Thread.sleep(500);
        List<ProcessedOrder> listed = Arrays.asList(http.getForObject("/orders", ProcessedOrder[].class));
        assertThat(listed).filteredOn(o -> o.orderId().equals(first)).singleElement()
                .extracting(ProcessedOrder::cents).isEqualTo(1250L);
        assertThat(listed).filteredOn(o -> o.orderId().equals(second)).hasSize(1);
        assertThat(listed).filteredOn(o -> o.orderId().equals(empty)).isEmpty();
        assertThat(http.getForObject("/actuator/health/readiness", String.class)).contains("\"UP\"");
    }

    private List<String> ids() {
        return Arrays.stream(http.getForObject("/orders", ProcessedOrder[].class)).map(ProcessedOrder::orderId).toList();
    }

    /** Pairs of order ID and amount, to the default exchange, routed to the pipeline's queue. */
    private static void publish(Object... orders) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbitmq);
        try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
            for (int i = 0; i < orders.length; i += 2) {
                String json = "{\"orderId\":\"" + orders[i] + "\",\"customer\":\"c-1\",\"cents\":" + orders[i + 1] + "}";
                channel.basicPublish("", "spring-orders-example", null, json.getBytes(StandardCharsets.UTF_8));
            }
        }
    }
}
