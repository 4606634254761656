package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DeliverCallback;
import dev.idem.cli.reply.QuoteHandler;
import dev.idem.testkit.ExternalService;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Request/reply under {@code kill -9}: two {@code bin/idem run} processes in transactional mode on PostgreSQL consume
 * one RabbitMQ queue of requests, each with a {@code reply_to} queue and a {@code correlation_id} of its own. A
 * producer in this JVM sends {@value #MESSAGES} requests at {@value #RATE} per second, {@value #REPEAT_PERCENT} % of
 * them copies of an earlier request (same message ID, another correlation ID, as a client that retries); every
 * {@link #KILL_EVERY} one process, in turn, is killed with {@code kill -9} and restarted. The handler
 * ({@link QuoteHandler}) writes one row per run in the store's transaction and replies a value of that run only.
 *
 * <p>Every request copy must get a reply; all the replies to one message ID, to its copies and to the redeliveries
 * after a kill, must be one and the same (the stored one: a second run would have said something else); and every
 * message ID must have exactly one row (the handler ran once per key).
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class RequestReplyIT {

    private static final int NODES = 2;
    private static final int MESSAGES = 1_500;
    private static final int REPEAT_PERCENT = 20;
    private static final int RATE = 250;
    private static final Duration KILL_EVERY = Duration.ofMillis(1_500);
    private static final int MIN_KILLS = 2;
    private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
    private static final Duration SETTLE_TIMEOUT = Duration.ofMinutes(3);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void everyRequestAndEachOfItsCopiesGetsTheOneStoredReplyAndTheHandlerRunsOncePerKey() throws Exception {
        String uri = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL",
                "amqp://guest:guest@127.0.0.1:5672/%2F", "Start it with: rabbitmq-server -detached", null);
        String pg = ExternalService.locate("PostgreSQL", "IDEM_TEST_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test", "Start it with: pg_ctlcluster 15 main start", null);
        String schema = "idem_rr_" + run;
        String requests = "idem-rr-" + run;
        String replies = requests + "-replies";
        String table = schema + ".quotes";
        sql(pg, "CREATE SCHEMA " + schema);
        sql(pg, "CREATE TABLE " + table + " (message_id VARCHAR(200) NOT NULL, pid BIGINT NOT NULL)");
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        // Correlation ID -> every reply body it got; message ID -> every reply body for any of its copies.
        Map<String, List<String>> byCorrelation = new ConcurrentHashMap<>();
        Map<String, Set<String>> byId = new ConcurrentHashMap<>();
        Map<String, String> idOfCorrelation = new HashMap<>();
        try (com.rabbitmq.client.Connection rabbit = factory.newConnection();
                Channel consume = rabbit.createChannel(); Channel publish = rabbit.createChannel()) {
            consume.queueDeclare(requests, true, false, false, null);
            consume.queueDeclare(replies, true, false, false, null);
            DeliverCallback onReply = (tag, delivery) -> {
                String correlation = delivery.getProperties().getCorrelationId();
                String body = new String(delivery.getBody(), StandardCharsets.UTF_8);
                byCorrelation.computeIfAbsent(String.valueOf(correlation),
                        c -> java.util.Collections.synchronizedList(new java.util.ArrayList<>())).add(body);
                byId.computeIfAbsent(body.substring(0, body.indexOf(' ')), i -> ConcurrentHashMap.newKeySet())
                        .add(body);
            };
            consume.basicConsume(replies, true, onReply, tag -> { });
            MessageStream stream = MessageStream.plan("quote-" + run + "-", MESSAGES, REPEAT_PERCENT, RATE, 29);
            for (int i = 0; i < stream.messages.size(); i++) {
                idOfCorrelation.put("c-" + i, stream.messages.get(i).id());
            }
            Map<String, String> env = Map.of(QuoteHandler.TABLE_ENV, table);
            try (IdemCluster cluster = new IdemCluster(dir, NODES, port -> config(uri, pg, schema, requests, port),
                    env, QuoteHandler.class, "quotes.jar")) {
                cluster.startAndAwaitServing(START_TIMEOUT);
                AtomicLong sent = new AtomicLong();
                Thread producer = new Thread(() -> send(publish, stream, requests, replies, sent), "rr-producer");
                producer.start();
                for (int turn = 0; producer.isAlive(); turn++) {
                    long start = System.nanoTime();
                    cluster.awaitUntil(() -> !producer.isAlive() || System.nanoTime() - start >= KILL_EVERY.toNanos(),
                            () -> "the next kill", KILL_EVERY.plusMinutes(1));
                    if (producer.isAlive()) {
                        cluster.node(turn % NODES + 1).killAndRestart();
                    }
                }
                producer.join();
                assertThat(sent.get()).as("requests sent and confirmed").isEqualTo(MESSAGES);
                cluster.awaitUntil(() -> byCorrelation.size() == MESSAGES, () -> "a reply to every request copy (now "
                        + byCorrelation.size() + " of " + MESSAGES + ")", SETTLE_TIMEOUT);
                cluster.awaitQuiet(Duration.ofSeconds(2), () -> byCorrelation.values().stream()
                        .mapToInt(List::size).sum(), SETTLE_TIMEOUT);
                cluster.terminateAll();

                Map<String, Integer> rows = rows(pg, table);
                int kills = cluster.kills();
                long resent = byCorrelation.values().stream().mapToInt(List::size).sum() - (long) MESSAGES;
                System.out.printf("[reply] %,d requests (%,d unique IDs, %d %% copies), %d kills: %,d copies answered,"
                        + " %,d replies sent more than once, %,d IDs with more than one distinct reply, %,d IDs with"
                        + " other than one row%n", MESSAGES, stream.uniqueIds.size(), REPEAT_PERCENT, kills,
                        byCorrelation.size(), resent, byId.values().stream().filter(s -> s.size() != 1).count(),
                        stream.uniqueIds.stream().filter(id -> rows.getOrDefault(id, 0) != 1).count());
                assertThat(kills).as("kill -9s while the requests flowed").isGreaterThanOrEqualTo(MIN_KILLS);
                for (Map.Entry<String, String> c : idOfCorrelation.entrySet()) {
                    assertThat(byCorrelation).as("request copy %s (%s) was answered", c.getKey(), c.getValue())
                            .containsKey(c.getKey());
                    assertThat(new HashSet<>(byCorrelation.get(c.getKey()))).as("replies to %s", c.getKey())
                            .allSatisfy(body -> assertThat(body).startsWith(c.getValue() + " "));
                }
                assertThat(byId).as("one distinct reply per message ID, the stored one")
                        .allSatisfy((id, bodies) -> assertThat(bodies).as(id).hasSize(1));
                assertThat(stream.uniqueIds).as("the handler ran once per key: one row each")
                        .allSatisfy(id -> assertThat(rows.get(id)).as(id).isEqualTo(1));
            }
        } finally {
            try (com.rabbitmq.client.Connection rabbit = factory.newConnection(); Channel ch = rabbit.createChannel()) {
                ch.queueDelete(requests);
                ch.queueDelete(replies);
                ch.queueDelete(requests + ".DLQ");
            }
            sql(pg, "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    /** Sends the stream's messages at its pace, each a request with its own correlation ID, confirmed. */
    private static void send(Channel channel, MessageStream stream, String queue, String replyTo, AtomicLong sent) {
        try {
            channel.confirmSelect();
            long start = System.nanoTime();
            for (int i = 0; i < stream.messages.size(); i++) {
                MessageStream.Message m = stream.messages.get(i);
                long wait = start + TimeUnit.MILLISECONDS.toNanos(m.sendAtMillis()) - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().deliveryMode(2).messageId(m.id())
                        .replyTo(replyTo).correlationId("c-" + i).build();
                channel.basicPublish("", queue, props, m.payload());
                if (i % 50 == 49) {
                    channel.waitForConfirmsOrDie(30_000);
                }
                sent.incrementAndGet();
            }
            channel.waitForConfirmsOrDie(30_000);
        } catch (Exception e) {
            throw new IllegalStateException("Publishing the requests failed", e);
        }
    }

    private static String config(String uri, String pg, String schema, String queue, int port) {
        return """
                broker:
                  type: rabbitmq
                  rabbitmq: { uri: "%s", prefetch: 50 }
                store:
                  type: jdbc
                  jdbc: { url: "%s?currentSchema=%s", username: postgres }
                pipelines:
                  quotes:
                    source: %s
                    handler: %s
                    transactional: true
                    concurrency: 8
                    max-in-flight: 100
                    lease: 3s
                    retention: 10m
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(uri, pg, schema, queue, QuoteHandler.class.getName(), port);
    }

    private static Map<String, Integer> rows(String url, String table) throws SQLException {
        Map<String, Integer> rows = new HashMap<>();
        try (Connection c = DriverManager.getConnection(url + "?user=postgres"); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT message_id, COUNT(*) FROM " + table + " GROUP BY message_id")) {
            while (rs.next()) {
                rows.put(rs.getString(1), rs.getInt(2));
            }
        }
        return rows;
    }

    private static void sql(String url, String statement) throws SQLException {
        try (Connection c = DriverManager.getConnection(url + "?user=postgres"); Statement s = c.createStatement()) {
            s.execute(statement);
        }
    }
}
