package dev.idem.bench.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Whether Idem's workers all run on RabbitMQ when every message carries the same routing key, as with the
 * default exchange, where the routing key is the queue's name. The routing key names a route, not an order,
 * so {@code ordering: key} must not serialise on it: with the default ordering key (a message without a
 * broker ordering key falls back to its idempotency key) the {@code concurrency} workers all run.
 *
 * <p>Each round fills a fresh durable queue with {@code messages} persistent 100-byte messages, each with a
 * unique AMQP {@code message-id}, published to the default exchange, and consumes it through the
 * {@code rabbitmq} adapter under {@code Idem.builder()}: Caffeine store, {@code ordering: key},
 * {@code concurrency: <concurrency>}, {@code max-in-flight: 1000}, a handler that sleeps {@code handler-ms}.
 * Time runs from the first handler call to the last message processed. Prints each round and the median, with
 * the limit {@code concurrency / handler-ms} (8 / 2 ms = 4,000 msg/s; the target is 3,600, 90 % of it), and
 * the ratio to a raw consumer in the same run: the bare client with the same prefetch handing each delivery
 * to one of {@code concurrency} threads that sleep as long and ack it. The
 * broker is {@code IDEM_BENCH_RABBITMQ_URL}, else {@code amqp://guest:guest@127.0.0.1:5672/%2F}.
 *
 * <p>Run (after {@code mvn -q -B -pl bench -am package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.rabbitmq.RabbitMqConcurrencyBenchmark
 * [messages=20000] [rounds=3] [concurrency=8] [handler-ms=2]}
 */
public final class RabbitMqConcurrencyBenchmark {

    private RabbitMqConcurrencyBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int concurrency = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        long handlerMillis = args.length > 3 ? Long.parseLong(args[3]) : 2;
        double limit = concurrency * 1000.0 / handlerMillis;
        String url = RabbitMqEndToEndBenchmark.brokerUrl();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(url);
        System.out.printf("RabbitMQ, one routing key: %,d messages per run, %d rounds, concurrency %d, handler %d ms,"
                + " broker at %s; limit %,.0f msg/s%n", messages, rounds, concurrency, handlerMillis,
                factory.getHost() + ":" + factory.getPort(), limit);
        String settings = """
                ordering: key
                concurrency: %d
                max-in-flight: 1000
                """.formatted(concurrency);
        Map<String, List<Double>> rates;
        try (Connection admin = factory.newConnection("idem-bench-admin")) {
            Side idem = run -> {
                String queue = RabbitMqEndToEndBenchmark.fill(admin, "idem-bench-concurrency-" + run, messages);
                try {
                    return RabbitMqEndToEndBenchmark.runIdem(url, queue, messages, settings,
                            (message, context) -> Thread.sleep(handlerMillis));
                } finally {
                    try (Channel ch = admin.createChannel()) {
                        ch.queueDelete(queue);
                        ch.queueDelete(queue + ".DLQ");
                    }
                }
            };
            Side raw = run -> {
                String queue = RabbitMqEndToEndBenchmark.fill(admin, "idem-bench-concurrency-raw-" + run, messages);
                try {
                    return runRaw(factory, queue, messages, concurrency, handlerMillis);
                } finally {
                    try (Channel ch = admin.createChannel()) {
                        ch.queueDelete(queue);
                    }
                }
            };
            rates = EndToEnd.alternate("rabbitmq", 0, rounds, Map.of("idem", idem, "raw", raw));
        }
        double median = EndToEnd.median(rates.get("idem"));
        double rawMedian = EndToEnd.median(rates.get("raw"));
        System.out.printf("--- median over %d rounds of %,d messages: idem %,.0f msg/s = %.0f %% of the limit"
                + " (%,.0f msg/s), %.2fx the raw consumer (%,.0f msg/s); target 3,600 msg/s (at concurrency 8,"
                + " handler 2 ms)%n", rounds, messages, median, 100 * median / limit, limit, median / rawMedian,
                rawMedian);
    }

    /**
     * The same work on the bare client: prefetch 1,000, each delivery handed to one of {@code workers} threads
     * that sleeps {@code handlerMillis} and acks it.
     */
    private static double runRaw(ConnectionFactory factory, String queue, int messages, int workers,
            long handlerMillis) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try (Connection c = factory.newConnection("idem-bench-raw")) {
            Channel ch = c.createChannel();
            ch.basicQos(1000);
            CountDownLatch done = new CountDownLatch(messages);
            AtomicLong start = new AtomicLong();
            ch.basicConsume(queue, false, new DefaultConsumer(ch) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    start.compareAndSet(0, System.nanoTime());
                    pool.execute(() -> {
                        try {
                            Thread.sleep(handlerMillis);
                            synchronized (ch) {
                                ch.basicAck(envelope.getDeliveryTag(), false);
                            }
                        } catch (IOException | InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                        done.countDown();
                    });
                }
            });
            if (!done.await(10, TimeUnit.MINUTES)) {
                throw new IllegalStateException("The raw consumer did not finish " + queue);
            }
            return messages / ((System.nanoTime() - start.get()) / 1e9);
        } finally {
            pool.shutdownNow();
        }
    }
}
