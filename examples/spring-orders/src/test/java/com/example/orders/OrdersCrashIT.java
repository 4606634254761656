package com.example.orders;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The example application as a real process, the JAR Spring Boot's plugin built: orders published twice each, the
 * process killed with SIGKILL while it works through them, then started again. Every order is recorded once: none
 * lost, no row twice (the primary key would refuse a second one, and the message would be dead-lettered instead).
 */
class OrdersCrashIT {

    private static final int ORDERS = 1500;

    private final String postgres = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
            "jdbc:postgresql://127.0.0.1:5432/test", "Start PostgreSQL with a database 'test'.", null);
    private final String rabbitmq = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
            "amqp://guest:guest@127.0.0.1:5672/%2F", "Start RabbitMQ with the guest user.", null);
    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private final String queue = "spring-orders-crash-" + run;

    @Test
    void killedMidStreamAndRestartedEveryOrderIsRecordedOnce() throws Exception {
        Process first = start(1);
        try {
            awaitProcessed(1, Duration.ofSeconds(60), first);
            publish();
            awaitProcessed(ORDERS / 5, Duration.ofSeconds(60), first);
        } finally {
            first.destroyForcibly().waitFor();
        }
        int atKill = processed();
        System.out.println("Killed with " + atKill + " of " + ORDERS + " orders recorded");
        Process second = start(2);
        try {
            awaitProcessed(ORDERS, Duration.ofSeconds(90), second);
        } finally {
            second.destroy();
            second.waitFor();
        }

        assertThat(atKill).as("killed mid-stream").isLessThan(ORDERS);
        assertThat(processed()).isEqualTo(ORDERS);
        assertThat(deadLetters()).isZero();
        deleteQueues();
    }

    private Process start(int n) throws IOException {
        Path log = Path.of("target", "crash-it-" + run + "-" + n + ".log");
        return new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", System.getProperty("app.jar"),
                "--server.port=0",
                "--spring.datasource.url=" + postgres,
                "--idem.broker.rabbitmq.uri=" + rabbitmq,
                "--idem.pipelines.orders.source=" + queue,
                "--idem.pipelines.orders.dead-letter=" + queue + ".dlq",
                "--idem.pipelines.orders.concurrency=2",
                // the keys the killed process held are taken over once their lease ran out
                "--idem.pipelines.orders.lease=3s",
                "--idem.runtime.summary-interval=0s")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** Each order twice, and one warm-up order first so that the queue exists before the rest is published. */
    private void publish() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbitmq);
        try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
            for (int copy = 0; copy < 2; copy++) {
                for (int i = 1; i < ORDERS; i++) {
                    channel.basicPublish("", queue, null, order(i));
                }
            }
        }
    }

    private void awaitProcessed(int count, Duration timeout, Process process) throws Exception {
        if (count == 1) {
            awaitQueue(process);
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(rabbitmq);
            try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
                channel.basicPublish("", queue, null, order(0));
                channel.basicPublish("", queue, null, order(0));
            }
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (processed() < count) {
            assertThat(process.isAlive()).as("the application runs").isTrue();
            assertThat(System.nanoTime()).as("%d orders processed in time", count).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    /** Waits until the application declared its queue, which it does as it starts consuming. */
    private void awaitQueue(Process process) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbitmq);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        try (Connection connection = factory.newConnection()) {
            while (true) {
                try (Channel channel = connection.createChannel()) {
                    channel.queueDeclarePassive(queue);
                    return;
                } catch (IOException e) {
                    assertThat(process.isAlive()).as("the application runs").isTrue();
                    assertThat(System.nanoTime()).as("the queue was declared in time").isLessThan(deadline);
                    Thread.sleep(100);
                }
            }
        }
    }

    private byte[] order(int i) {
        return ("{\"orderId\":\"" + run + "-" + i + "\",\"customer\":\"c-" + i + "\",\"cents\":" + (100 + i) + "}")
                .getBytes(StandardCharsets.UTF_8);
    }

    private int processed() throws SQLException {
        try (java.sql.Connection db = DriverManager.getConnection(postgres, "postgres", null);
                PreparedStatement count = db.prepareStatement(
                        "SELECT count(*) FROM processed_order WHERE order_id LIKE ?")) {
            count.setString(1, run + "-%");
            try (ResultSet rs = count.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            if ("42P01".equals(e.getSQLState())) {
                return 0; // the application has not created its table yet
            }
            throw e;
        }
    }

    private long deadLetters() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbitmq);
        try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(queue + ".dlq").getMessageCount();
        } catch (IOException e) {
            return 0; // never declared: nothing was dead-lettered
        }
    }

    private void deleteQueues() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbitmq);
        try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
            for (String q : List.of(queue, queue + ".dlq")) {
                channel.queueDelete(q);
            }
        }
    }
}
