package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.BatchContext;
import dev.idem.api.BatchHandler;
import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.api.TypedHandler;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.stereotype.Component;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Transactional mode on PostgreSQL with the application's DataSource: a handler bean's JdbcTemplate writes, those of
 * the {@code @Transactional} service it calls, and the key commit or roll back together.
 */
@SpringBootTest(classes = TransactionalModeTest.App.class, properties = {
        "idem.broker.type=memory",
        "idem.store.type=jdbc",
        "idem.store.jdbc.table=idem_spring_keys",
        "idem.pipelines.orders.source=orders",
        "idem.pipelines.orders.dead-letter=orders.dlq",
        "idem.pipelines.orders.transactional=true",
        "idem.pipelines.orders.retry.max-attempts=1",
        "idem.pipelines.payments.source=payments",
        "idem.pipelines.payments.transactional=true",
        "idem.pipelines.payments.id[0].type=json-pointer",
        "idem.pipelines.payments.id[0].pointer=/paymentId",
        "idem.pipelines.refunds.source=refunds",
        "idem.pipelines.refunds.transactional=true",
        "idem.pipelines.refunds.batch.size=10",
        "idem.runtime.summary-interval=0s"})
class TransactionalModeTest {

    static final InMemoryBroker BROKER = new InMemoryBroker();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestServices.postgres(registry);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({OrderHandler.class, AuditService.class, PaymentHandler.class, RefundHandler.class})
    static class App {
        @Bean
        IdemBuilderCustomizer memoryBroker() {
            return builder -> builder.broker("memory", BROKER);
        }
    }

    /** Whether the connection JdbcTemplate got was the run's own, by message ID. */
    static final Map<String, Boolean> SAME_CONNECTION = new ConcurrentHashMap<>();

    @IdemHandler("orders")
    static class OrderHandler implements MessageHandler {
        private final JdbcTemplate jdbc;
        private final DataSource dataSource;
        private final AuditService audit;

        OrderHandler(JdbcTemplate jdbc, DataSource dataSource, AuditService audit) {
            this.jdbc = jdbc;
            this.dataSource = dataSource;
            this.audit = audit;
        }

        @Override
        public void handle(Message message, HandlerContext context) {
            String id = message.idempotencyKey().orElseThrow();
            Connection run = context.transaction(Connection.class).orElseThrow();
            SAME_CONNECTION.put(id, DataSourceUtils.getConnection(dataSource) == run);
            jdbc.update("INSERT INTO spring_orders (id) VALUES (?)", id);
            String payload = new String(message.payload(), StandardCharsets.UTF_8);
            switch (payload) {
                case "fail" -> {
                    audit.record(id);
                    throw new NonRetryableException("the order is refused after its rows were written");
                }
                case "swallow" -> {
                    try {
                        audit.recordAndFail(id);
                    } catch (IllegalArgumentException e) {
                        // Swallowed: the @Transactional method marked the transaction rollback-only all the same.
                    }
                }
                default -> audit.record(id);
            }
        }
    }

    record Payment(String paymentId, long cents) {
    }

    /** A typed handler behind the transaction binding's proxy: the runtime still decodes its payload type. */
    @IdemHandler("payments")
    static class PaymentHandler implements TypedHandler<Payment> {
        private final JdbcTemplate jdbc;

        PaymentHandler(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @Override
        public void handle(Payment payment, Message message, HandlerContext context) {
            jdbc.update("INSERT INTO spring_orders (id) VALUES (?)", payment.paymentId() + ":" + payment.cents());
        }
    }

    /** A batch handler behind the proxy: one JdbcTemplate batch in the batch's transaction. */
    @IdemHandler("refunds")
    static class RefundHandler implements BatchHandler {
        private final JdbcTemplate jdbc;

        RefundHandler(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @Override
        public void handle(List<Message> messages, BatchContext context) {
            jdbc.batchUpdate("INSERT INTO spring_orders (id) VALUES (?)", messages.stream()
                    .map(m -> new Object[] {m.idempotencyKey().orElseThrow()}).toList());
            if (messages.stream().anyMatch(m -> new String(m.payload(), StandardCharsets.UTF_8).equals("fail"))) {
                throw new NonRetryableException("a refund of the batch is refused");
            }
        }
    }

    @Component
    static class AuditService {
        private final JdbcTemplate jdbc;

        AuditService(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @Transactional
        public void record(String id) {
            assertThat(TransactionSynchronizationManager.isActualTransactionActive()).isTrue();
            jdbc.update("INSERT INTO spring_audit (id) VALUES (?)", id);
        }

        @Transactional
        public void recordAndFail(String id) {
            jdbc.update("INSERT INTO spring_audit (id) VALUES (?)", id);
            throw new IllegalArgumentException("audit refused");
        }
    }

    @BeforeAll
    static void tables(@Autowired JdbcTemplate jdbc) {
        jdbc.execute("CREATE TABLE IF NOT EXISTS spring_orders (id text PRIMARY KEY)");
        jdbc.execute("CREATE TABLE IF NOT EXISTS spring_audit (id text PRIMARY KEY)");
    }

    @Autowired
    JdbcTemplate jdbc;

    @Test
    void aSuccessfulRunCommitsTheRepositoryWritesTheJoinedTransactionAndTheKeyTogether() {
        String id = "ok-" + UUID.randomUUID();
        TestServices.publish(BROKER, "orders", id, "ok");

        await().atMost(Duration.ofSeconds(15)).until(() -> completed(id));
        assertThat(rows("spring_orders", id)).isEqualTo(1);
        assertThat(rows("spring_audit", id)).isEqualTo(1);
        assertThat(SAME_CONNECTION.get(id)).isTrue();
    }

    @Test
    void aFailedRunRollsBackTheRepositoryWritesTheJoinedTransactionAndTheKey() {
        String id = "fail-" + UUID.randomUUID();
        int before = BROKER.depth("orders.dlq");
        TestServices.publish(BROKER, "orders", id, "fail");

        await().atMost(Duration.ofSeconds(15)).until(() -> BROKER.depth("orders.dlq") == before + 1);
        assertThat(rows("spring_orders", id)).isZero();
        assertThat(rows("spring_audit", id)).isZero();
        assertThat(completed(id)).isFalse();
        assertThat(SAME_CONNECTION.get(id)).isTrue();
    }

    @Test
    void aTransactionalMethodThatFailedInsideTheRunFailsItEvenWhenTheHandlerSwallowsTheException() {
        String id = "swallow-" + UUID.randomUUID();
        int before = BROKER.depth("orders.dlq");
        TestServices.publish(BROKER, "orders", id, "swallow");

        await().atMost(Duration.ofSeconds(15)).until(() -> BROKER.depth("orders.dlq") == before + 1);
        assertThat(rows("spring_orders", id)).isZero();
        assertThat(rows("spring_audit", id)).isZero();
        assertThat(completed(id)).isFalse();
    }

    @Test
    void aTypedHandlerBeanGetsItsDecodedPayloadInTheTransaction() {
        String id = "pay-" + UUID.randomUUID();
        TestServices.publish(BROKER, "payments", "ignored-" + id, "{\"paymentId\":\"" + id + "\",\"cents\":250}");

        await().atMost(Duration.ofSeconds(15)).until(() -> completed("payments", id));
        assertThat(rows("spring_orders", id + ":250")).isEqualTo(1);
    }

    @Test
    void aBatchHandlerBeansWritesCommitWithTheKeysOfItsBatchOrNotAtAll() {
        String ok = "refund-" + UUID.randomUUID();
        String refused = "refund-" + UUID.randomUUID();
        TestServices.publish(BROKER, "refunds", ok, "ok");
        TestServices.publish(BROKER, "refunds", refused, "fail");

        await().atMost(Duration.ofSeconds(15)).until(() -> completed("refunds", ok));
        await().atMost(Duration.ofSeconds(15)).until(() -> BROKER.depth("refunds.DLQ") >= 1);
        assertThat(rows("spring_orders", ok)).isEqualTo(1);
        assertThat(rows("spring_orders", refused)).isZero();
        assertThat(completed("refunds", refused)).isFalse();
    }

    private int rows(String table, String id) {
        return jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE id = ?", Integer.class, id);
    }

    private boolean completed(String id) {
        return completed("orders", id);
    }

    private boolean completed(String pipeline, String id) {
        return jdbc.queryForObject("SELECT count(*) FROM idem_spring_keys WHERE namespace = convert_to(?, 'UTF8')"
                + " AND id = convert_to(?, 'UTF8') AND state = 2", Integer.class, pipeline, id) == 1;
    }
}
