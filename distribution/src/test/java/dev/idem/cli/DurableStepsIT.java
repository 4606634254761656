package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.cli.payments.ChargingHandler;
import dev.idem.testkit.ExternalService;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What durable steps and derived idempotency keys do against {@code kill -9}, measured: two {@code bin/idem run}
 * processes in plain mode on the Redis store, in one Kafka consumer group, charge each order of a stream through a
 * local HTTP payment service ({@link Payments}: it counts the charges it applies per order, and applies a request
 * whose {@code Idempotency-Key} it has seen before only once). A producer in this JVM publishes
 * {@value #DEFAULT_MESSAGES} messages at {@value #DEFAULT_RATE} per second (the acceptance size, 10,000 orders, with
 * {@code -Didem.it.steps.messages=10000 -Didem.it.steps.rate=250}), {@value #REPEAT_PERCENT} % of them repeats; every {@link #KILL_EVERY} one
 * process, in turn, is killed with {@code kill -9} and restarted at once. The same setup runs three times, with the
 * handler ({@link ChargingHandler}) charging:
 * <ol>
 *   <li>directly, without steps or keys: a kill after a charge and before its key's completion charges again;</li>
 *   <li>in a durable step: a charge recorded before the kill is replayed, but one whose call was under way (the
 *       service applied it, the answer never arrived) or answered and not yet recorded charges again;</li>
 *   <li>in a durable step with the derived key as {@code Idempotency-Key}: the service applies the second call of a
 *       charge once. Charges applied twice must be 0.</li>
 * </ol>
 * The service answers {@value #PAYMENT_LATENCY_MS} ms after it applied a charge, as a real payment API takes its time,
 * so calls are under way when a process dies. Every variant must charge every order (none lost). One line per variant
 * and a summary print the figures. Run it with {@code mvn -B -o verify -pl distribution -Dit.test=DurableStepsIT
 * -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class DurableStepsIT {

    private static final int NODES = 2;
    private static final int PARTITIONS = 4;
    private static final int DEFAULT_MESSAGES = 2_500;
    private static final int DEFAULT_RATE = 125;
    private static final int MESSAGES = Integer.getInteger("idem.it.steps.messages", DEFAULT_MESSAGES);
    private static final int REPEAT_PERCENT = 20;
    private static final int RATE = Integer.getInteger("idem.it.steps.rate", DEFAULT_RATE);
    private static final Duration KILL_EVERY = Duration.ofSeconds(3);
    private static final int MIN_KILLS = 4;
    private static final int CONCURRENCY = 8;
    private static final int MAX_IN_FLIGHT = 100;
    private static final int PAYMENT_LATENCY_MS = 50;
    private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
    private static final Duration SETTLE_TIMEOUT = Duration.ofMinutes(2);
    private static final Duration QUIET = Duration.ofSeconds(3);

    @TempDir
    Path dir;

    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private Payments payments;

    @BeforeEach
    void startPayments() throws IOException {
        payments = Payments.start(PAYMENT_LATENCY_MS);
    }

    @AfterEach
    void stopPayments() {
        payments.stop();
    }

    /** What one variant measured. */
    record Figures(String mode, int orders, int charged, int chargedTwice, long extraCharges, long keyReplays,
            int kills, long seconds) {
        @Override
        public String toString() {
            return String.format("%-9s orders %,d, charged %,d, charged more than once %d (extra charges %d),"
                    + " calls the key deduplicated %d, kills %d, %ds", mode, orders, charged, chargedTwice,
                    extraCharges, keyReplays, kills, seconds);
        }
    }

    @Test
    void chargesAppliedTwiceWithoutStepsWithStepsAloneAndWithStepsAndKeys() throws Exception {
        String uri = ExternalService.locate("Redis", "IDEM_TEST_REDIS_URL", "redis://127.0.0.1:6379",
                "Start it with: redis-server --daemonize yes", null);
        List<Figures> figures = new ArrayList<>();
        for (String mode : List.of("plain", "step", "step-key")) {
            figures.add(variant(uri, mode));
        }
        System.out.println("[steps] charges applied twice under kill -9 every " + KILL_EVERY.toSeconds() + "s, "
                + NODES + " processes, plain mode on Redis, " + MESSAGES + " messages (" + REPEAT_PERCENT
                + " % repeats) each: without steps or keys " + figures.get(0).chargedTwice() + ", with steps alone "
                + figures.get(1).chargedTwice() + ", with steps and idempotencyKey " + figures.get(2).chargedTwice());

        SoftAssertions softly = new SoftAssertions();
        for (Figures f : figures) {
            softly.assertThat(f.charged()).as("%s: every order charged (none lost)", f.mode()).isEqualTo(f.orders());
            softly.assertThat(f.kills()).as("%s: kill -9s while the stream flowed", f.mode())
                    .isGreaterThanOrEqualTo(MIN_KILLS);
        }
        softly.assertThat(figures.get(2).chargedTwice()).as("orders charged twice with steps and idempotencyKey")
                .isZero();
        softly.assertThat(figures.get(2).extraCharges()).as("extra charges with steps and idempotencyKey").isZero();
        softly.assertThat(figures.get(0).chargedTwice()).as("without steps or keys, kill -9 charges some orders twice:"
                + " otherwise this test's kills struck no charge and prove nothing").isPositive();
        softly.assertAll();
    }

    private Figures variant(String redisUri, String mode) throws Exception {
        long started = System.nanoTime();
        payments.reset();
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = "steps-" + mode + "-" + run;
        kafka.createTopic(topic, PARTITIONS);
        MessageStream stream = MessageStream.plan("order-" + mode + "-" + run + "-", MESSAGES, REPEAT_PERCENT, RATE, 11);
        Path variantDir = dir.resolve(mode);
        Map<String, String> env = Map.of(ChargingHandler.URL_ENV, payments.url(), ChargingHandler.MODE_ENV, mode);
        try (IdemCluster cluster = new IdemCluster(variantDir, NODES,
                port -> config(kafka, redisUri, topic, mode, port), env, ChargingHandler.class, "payments.jar")) {
            cluster.startAndAwaitServing(START_TIMEOUT);
            stream.publishToKafka(kafka.bootstrapServers(), topic);
            for (int turn = 0; ; turn++) {
                long intervalStart = System.nanoTime();
                cluster.awaitUntil(() -> stream.done().isDone()
                        || System.nanoTime() - intervalStart >= KILL_EVERY.toNanos(), () -> "the next kill",
                        KILL_EVERY.plusMinutes(1));
                if (stream.done().isDone()) {
                    break;
                }
                cluster.node(turn % NODES + 1).killAndRestart();
            }
            stream.done().join();
            cluster.awaitUntil(() -> payments.charged(stream.uniqueIds) == stream.uniqueIds.size(),
                    () -> "every order to be charged (now " + payments.charged(stream.uniqueIds) + " of "
                            + stream.uniqueIds.size() + ")", SETTLE_TIMEOUT);
            cluster.awaitQuiet(QUIET, payments::applied, SETTLE_TIMEOUT);
            cluster.terminateAll();

            Figures figures = new Figures(mode, stream.uniqueIds.size(), payments.charged(stream.uniqueIds),
                    payments.chargedMoreThanOnce(), payments.extraCharges(), payments.keyReplays(), cluster.kills(),
                    IdemCluster.secondsSince(started));
            System.out.println("[steps] " + figures);
            return figures;
        } finally {
            kafka.deleteTopic(topic);
        }
    }

    private String config(EmbeddedKafka kafka, String redisUri, String topic, String mode, int port) {
        return """
                broker:
                  type: kafka
                  kafka:
                    bootstrap-servers: %s
                    group-id-prefix: "steps-%s-%s-"
                    client: { session.timeout.ms: 6000, heartbeat.interval.ms: 1000 }
                store:
                  type: redis
                  redis: { uri: "%s", key-prefix: "idem-steps-%s-%s:" }
                pipelines:
                  payments:
                    source: %s
                    handler: %s
                    concurrency: %d
                    max-in-flight: %d
                    lease: 3s
                    retention: 10m
                runtime:
                  summary-interval: 5s
                  shutdown-timeout: 10s
                  http: { port: %d }
                """.formatted(kafka.bootstrapServers(), run, mode, redisUri, run, mode, topic,
                ChargingHandler.class.getName(), CONCURRENCY, MAX_IN_FLIGHT, port);
    }

    /**
     * The payment service: {@code POST /charges} with an order's ID as the body applies one charge to it and answers
     * the charge's ID, {@code latencyMs} later. A request with an {@code Idempotency-Key} it has seen before applies
     * nothing and answers the first charge's ID, as Stripe's API does; the key and the charge are remembered
     * together, atomically. Thread-safe; answers on a pool of its own.
     */
    static final class Payments {
        private final HttpServer server;
        private final ExecutorService pool = Executors.newFixedThreadPool(32);
        private final int latencyMs;
        private final Map<String, AtomicInteger> chargesByOrder = new ConcurrentHashMap<>();
        private final Map<String, String> chargeByKey = new ConcurrentHashMap<>();
        private final AtomicLong applied = new AtomicLong();
        private final AtomicLong keyReplays = new AtomicLong();

        private Payments(HttpServer server, int latencyMs) {
            this.server = server;
            this.latencyMs = latencyMs;
        }

        static Payments start(int latencyMs) throws IOException {
            HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 200);
            Payments payments = new Payments(server, latencyMs);
            server.createContext("/charges", payments::charge);
            server.setExecutor(payments.pool);
            server.start();
            return payments;
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        private void charge(HttpExchange exchange) throws IOException {
            try (exchange) {
                if (!exchange.getRequestMethod().equals("POST")) {
                    exchange.sendResponseHeaders(405, -1);
                    return;
                }
                String order = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8).trim();
                String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
                boolean[] fresh = new boolean[1];
                String id = key == null ? apply(order)
                        : chargeByKey.computeIfAbsent(key, k -> {
                            fresh[0] = true;
                            return apply(order);
                        });
                if (key != null && !fresh[0]) {
                    keyReplays.incrementAndGet();
                }
                // The charge is applied; the answer takes its time, during which the caller may die.
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(latencyMs));
                byte[] body = id.getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(201, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            } catch (IOException e) {
                // The caller died while it waited: the charge stands, as on a real service.
            }
        }

        private String apply(String order) {
            int n = chargesByOrder.computeIfAbsent(order, o -> new AtomicInteger()).incrementAndGet();
            applied.incrementAndGet();
            return "ch_" + order + "_" + n;
        }

        void reset() {
            chargesByOrder.clear();
            chargeByKey.clear();
            applied.set(0);
            keyReplays.set(0);
        }

        long applied() {
            return applied.get();
        }

        long keyReplays() {
            return keyReplays.get();
        }

        int charged(Set<String> orders) {
            int n = 0;
            for (String order : orders) {
                AtomicInteger c = chargesByOrder.get(order);
                if (c != null && c.get() > 0) {
                    n++;
                }
            }
            return n;
        }

        int chargedMoreThanOnce() {
            return (int) chargesByOrder.values().stream().filter(c -> c.get() > 1).count();
        }

        long extraCharges() {
            return chargesByOrder.values().stream().mapToLong(c -> Math.max(0, c.get() - 1)).sum();
        }

        void stop() {
            server.stop(0);
            pool.shutdownNow();
        }
    }
}
