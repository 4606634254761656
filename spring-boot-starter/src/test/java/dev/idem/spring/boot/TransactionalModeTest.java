package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.testkit.memory.InMemoryBroker;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
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
        "idem.runtime.summary-interval=0s"})
class TransactionalModeTest {

    static final InMemoryBroker BROKER = new InMemoryBroker();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestServices.postgres(registry);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({OrderHandler.class, AuditService.class})
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

    private int rows(String table, String id) {
        return jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE id = ?", Integer.class, id);
    }

    private boolean completed(String id) {
        return jdbc.queryForObject("SELECT count(*) FROM idem_spring_keys WHERE namespace = convert_to('orders', 'UTF8')"
                + " AND id = convert_to(?, 'UTF8') AND state = 2", Integer.class, id) == 1;
    }
}
