package dev.idem.bench.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.idem.api.MessageHandler;
import dev.idem.bench.EndToEnd;
import dev.idem.runtime.Idem;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * End-to-end messages per second through the real runtime on RabbitMQ, against the raw {@code amqp-client}
 * consumer doing the same consumption, measured alternately in one run.
 *
 * <p>Each round fills a fresh durable queue with {@code messages} persistent 100-byte messages, each with a
 * unique AMQP {@code message-id}, and consumes it once raw and once through Idem (in alternating order):
 * <ul>
 *   <li><b>raw</b>: one channel, {@code basicQos(prefetch)}, manual acks, {@code basicAck(tag, false)} per message
 *   in the consumer callback;</li>
 *   <li><b>idem</b>: the {@code rabbitmq} adapter created from YAML (one consumer channel, prefetch derived from
 *   {@code max-in-flight: <prefetch>}, {@code basicAck} per message, runs of acks coalesced where safe) under
 *   {@code Idem.builder()} with the Caffeine store, a no-op handler, {@code ordering: none},
 *   {@code concurrency: 2}, the ID from the {@code message-id} header (which the adapter fills from the AMQP
 *   property).</li>
 * </ul>
 * Time runs from the first message received (the first handler call for Idem) to the last one acknowledged
 * (Idem: counted as {@code processed}), so start-up is not measured. Prints each round, the medians and their
 * ratio. The broker is {@code IDEM_BENCH_RABBITMQ_URL}, else {@code amqp://guest:guest@127.0.0.1:5672/%2F}; on
 * a small machine it shares the CPUs with the benchmark, which the figures then reflect.
 *
 * <p>Run (after {@code mvn -pl bench package}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.rabbitmq.RabbitMqEndToEndBenchmark [messages] [rounds]
 * [prefetch]} (defaults 100000, 5 and 1000).
 */
public final class RabbitMqEndToEndBenchmark {

    private static final byte[] PAYLOAD = new byte[100];

    private RabbitMqEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int prefetch = args.length > 2 ? Integer.parseInt(args[2]) : 1000;
        String url = brokerUrl();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(url);
        System.out.printf("RabbitMQ end-to-end: %d messages per run, %d rounds, prefetch %d, broker at %s%n",
                messages, rounds, prefetch, factory.getHost() + ":" + factory.getPort());
        List<Double> raw = new ArrayList<>();
        List<Double> idem = new ArrayList<>();
        try (Connection admin = factory.newConnection("idem-bench-admin")) {
            // One unmeasured warm-up of each.
            runRaw(factory, fill(admin, "idem-bench-warmup-raw", messages), messages, prefetch);
            runIdem(url, fill(admin, "idem-bench-warmup-idem", messages), messages, prefetch);
            for (int r = 1; r <= rounds; r++) {
                boolean rawFirst = r % 2 == 1;
                for (int side = 0; side < 2; side++) {
                    if ((side == 0) == rawFirst) {
                        String queue = fill(admin, "idem-bench-raw-" + r, messages);
                        double rate = runRaw(factory, queue, messages, prefetch);
                        raw.add(rate);
                        System.out.printf("round %d raw  %,10.0f msg/s%n", r, rate);
                    } else {
                        String queue = fill(admin, "idem-bench-idem-" + r, messages);
                        double rate = runIdem(url, queue, messages, prefetch);
                        idem.add(rate);
                        System.out.printf("round %d idem %,10.0f msg/s%n", r, rate);
                    }
                }
            }
            deleteQueues(admin, rounds);
        }
        double rawMedian = EndToEnd.median(raw);
        double idemMedian = EndToEnd.median(idem);
        System.out.printf("median raw %,.0f msg/s, idem %,.0f msg/s, ratio idem/raw %.2f%n", rawMedian, idemMedian,
                idemMedian / rawMedian);
    }

    /** {@code IDEM_BENCH_RABBITMQ_URL}, else the local server as guest. */
    static String brokerUrl() {
        String env = System.getenv("IDEM_BENCH_RABBITMQ_URL");
        return env != null && !env.isBlank() ? env : "amqp://guest:guest@127.0.0.1:5672/%2F";
    }

    /**
     * Declares {@code queue} afresh and fills it through the default exchange (routing key = the queue's
     * name), publisher confirms awaited once at the end.
     */
    static String fill(Connection admin, String queue, int messages) throws Exception {
        try (Channel ch = admin.createChannel()) {
            ch.queueDelete(queue);
            ch.queueDeclare(queue, true, false, false, null);
            ch.confirmSelect();
            for (int i = 0; i < messages; i++) {
                AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                        .messageId(queue + "-" + i).deliveryMode(2).build();
                ch.basicPublish("", queue, props, PAYLOAD);
            }
            ch.waitForConfirmsOrDie(120_000);
        }
        return queue;
    }

    private static void deleteQueues(Connection admin, int rounds) throws Exception {
        try (Channel ch = admin.createChannel()) {
            List<String> names = new ArrayList<>(List.of("idem-bench-warmup-raw", "idem-bench-warmup-idem"));
            for (int r = 1; r <= rounds; r++) {
                names.add("idem-bench-raw-" + r);
                names.add("idem-bench-idem-" + r);
                names.add("idem-bench-idem-" + r + ".DLQ");
            }
            names.add("idem-bench-warmup-idem.DLQ");
            for (String name : names) {
                ch.queueDelete(name);
            }
        }
    }

    private static double runRaw(ConnectionFactory factory, String queue, int messages, int prefetch)
            throws Exception {
        try (Connection c = factory.newConnection("idem-bench-raw")) {
            Channel ch = c.createChannel();
            ch.basicQos(prefetch);
            CountDownLatch done = new CountDownLatch(1);
            AtomicLong start = new AtomicLong();
            AtomicLong end = new AtomicLong();
            ch.basicConsume(queue, false, new DefaultConsumer(ch) {
                private int received;

                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                        throws IOException {
                    if (received++ == 0) {
                        start.set(System.nanoTime());
                    }
                    ch.basicAck(envelope.getDeliveryTag(), false);
                    if (received == messages) {
                        end.set(System.nanoTime());
                        done.countDown();
                    }
                }
            });
            if (!done.await(10, TimeUnit.MINUTES)) {
                throw new IllegalStateException("The raw consumer did not finish " + queue);
            }
            return (messages - 1) / ((end.get() - start.get()) / 1e9);
        }
    }

    private static double runIdem(String url, String queue, int messages, int prefetch)
            throws InterruptedException {
        return runIdem(url, queue, messages, """
                ordering: none
                concurrency: 2
                max-in-flight: %d
                """.formatted(prefetch), (message, context) -> {
                });
    }

    /**
     * Runs Idem with the Caffeine store and {@code handler} over {@code queue} until {@code messages} are
     * settled.
     *
     * @param settings the pipeline's keys besides {@code source}, as YAML lines ({@code concurrency: 8})
     * @return messages per second, from the first handler call to the last message settled
     */
    static double runIdem(String url, String queue, int messages, String settings, MessageHandler handler)
            throws InterruptedException {
        String yaml = """
                broker:
                  type: rabbitmq
                  rabbitmq:
                    uri: "%s"
                    connection-name: idem-bench
                store: { type: caffeine }
                pipelines:
                  bench:
                    source: %s
                """.formatted(url, queue) + settings.indent(4);
        return EndToEnd.rate(messages, EndToEnd.timeIdem(Idem.builder().configYaml(yaml).env(Map.of()), "bench",
                messages, handler));
    }
}
