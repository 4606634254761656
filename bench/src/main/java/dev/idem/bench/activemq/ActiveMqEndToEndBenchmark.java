package dev.idem.bench.activemq;

import dev.idem.adapter.activemq.ActiveMqBrokerAdapterProvider;
import dev.idem.bench.EndToEnd;
import dev.idem.runtime.Idem;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.PluginConfig;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQSession;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * End-to-end messages per second through the real runtime on ActiveMQ, against the raw JMS client doing the
 * same consumption, measured alternately in one run.
 *
 * <p>An embedded broker (persistent, KahaDB in a temporary directory) listens on a free TCP port on
 * 127.0.0.1; both sides connect over TCP. Each round fills a fresh queue with {@code messages} persistent
 * 100-byte BytesMessages, each with a unique {@code message-id} property, and consumes it once raw and once
 * through Idem (in alternating order):
 * <ul>
 *   <li><b>raw</b>: one {@code INDIVIDUAL_ACKNOWLEDGE} session, JMS prefetch 100 (what the adapter uses with its
 *   defaults), {@code receive()} then {@code acknowledge()} per message, on one thread;</li>
 *   <li><b>idem</b>: the {@code activemq} adapter (defaults: one consumer, window 200 = prefetch 100 + 100 handed
 *   over) under {@code Idem.builder()} with the Caffeine store, a no-op handler, {@code ordering: none},
 *   {@code concurrency: 2}, the ID from the {@code message-id} header.</li>
 * </ul>
 * Time runs from the first message received (the first handler call for Idem) to the last one acknowledged
 * (Idem: counted as {@code processed}), so start-up is not measured. Prints each round and the medians and
 * their ratio.
 *
 * <p>Run (after {@code mvn -pl bench package}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.activemq.ActiveMqEndToEndBenchmark [messages] [rounds]}
 * (defaults 50000 and 5).
 */
public final class ActiveMqEndToEndBenchmark {

    private static final byte[] PAYLOAD = new byte[100];
    private static final int RAW_PREFETCH = 100;

    private ActiveMqEndToEndBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        Path dir = Files.createTempDirectory("idem-activemq-bench");
        BrokerService broker = startBroker(dir);
        String url = broker.getTransportConnectors().get(0).getConnectUri().toString();
        System.out.printf("ActiveMQ end-to-end: %d messages per run, %d rounds, broker at %s%n", messages, rounds, url);
        List<Double> raw = new ArrayList<>();
        List<Double> idem = new ArrayList<>();
        try {
            // One unmeasured warm-up of each.
            runRaw(url, fill(url, "warmup-raw", messages));
            runIdem(url, fill(url, "warmup-idem", messages), messages);
            for (int r = 1; r <= rounds; r++) {
                boolean rawFirst = r % 2 == 1;
                for (int side = 0; side < 2; side++) {
                    if ((side == 0) == rawFirst) {
                        double rate = runRaw(url, fill(url, "raw-" + r, messages));
                        raw.add(rate);
                        System.out.printf("round %d raw  %,10.0f msg/s%n", r, rate);
                    } else {
                        double rate = runIdem(url, fill(url, "idem-" + r, messages), messages);
                        idem.add(rate);
                        System.out.printf("round %d idem %,10.0f msg/s%n", r, rate);
                    }
                }
            }
        } finally {
            broker.stop();
            broker.waitUntilStopped();
        }
        double rawMedian = EndToEnd.median(raw);
        double idemMedian = EndToEnd.median(idem);
        System.out.printf("median raw %,.0f msg/s, idem %,.0f msg/s, ratio idem/raw %.2f%n", rawMedian, idemMedian,
                idemMedian / rawMedian);
    }

    private static BrokerService startBroker(Path dir) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("idem-bench");
        broker.setPersistent(true);
        broker.setUseJmx(false);
        broker.setUseShutdownHook(false);
        broker.setAdvisorySupport(false);
        broker.setDataDirectoryFile(dir.toFile());
        KahaDBPersistenceAdapter kahaDb = new KahaDBPersistenceAdapter();
        kahaDb.setDirectory(new File(dir.toFile(), "kahadb"));
        broker.setPersistenceAdapter(kahaDb);
        broker.addConnector("tcp://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        return broker;
    }

    private static ActiveMQConnectionFactory factory(String url) {
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url);
        factory.setWatchTopicAdvisories(false);
        factory.setCheckForDuplicates(false);
        return factory;
    }

    /** Fills a new queue with persistent messages, sent asynchronously (filling is not measured). */
    private static String fill(String url, String queue, int messages) throws JMSException {
        ActiveMQConnectionFactory factory = factory(url);
        factory.setUseAsyncSend(true);
        Connection c = factory.createConnection();
        try {
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer p = s.createProducer(new ActiveMQQueue(queue));
            p.setDeliveryMode(DeliveryMode.PERSISTENT);
            for (int i = 0; i < messages; i++) {
                BytesMessage m = s.createBytesMessage();
                m.writeBytes(PAYLOAD);
                m.setStringProperty("message-id", queue + "-" + i);
                p.send(m);
            }
            // A synchronous round trip: every asynchronous send before it has reached the broker.
            s.createProducer(new ActiveMQQueue(queue + ".fence")).send(s.createTextMessage("fence"),
                    DeliveryMode.PERSISTENT, 4, 0);
        } finally {
            c.close();
        }
        return queue;
    }

    private static double runRaw(String url, String queue) throws JMSException {
        Connection c = factory(url).createConnection();
        try {
            c.start();
            Session s = c.createSession(false, ActiveMQSession.INDIVIDUAL_ACKNOWLEDGE);
            MessageConsumer consumer = s.createConsumer(
                    new ActiveMQQueue(queue + "?consumer.prefetchSize=" + RAW_PREFETCH));
            long start = 0;
            int received = 0;
            for (Message m = consumer.receive(10_000); m != null; m = consumer.receive(1_000)) {
                if (received++ == 0) {
                    start = System.nanoTime();
                }
                m.acknowledge();
            }
            long end = System.nanoTime() - 1_000_000_000L; // the last receive waited 1s for nothing
            return (received - 1) / ((end - start) / 1e9);
        } finally {
            c.close();
        }
    }

    private static double runIdem(String url, String queue, int messages) throws InterruptedException {
        BrokerAdapter adapter = new ActiveMqBrokerAdapterProvider().create(new UrlOnly(url));
        String yaml = """
                broker: { type: activemq }
                store: { type: caffeine }
                pipelines:
                  bench:
                    source: %s
                    ordering: none
                    concurrency: 2
                """.formatted(queue);
        try {
            return EndToEnd.rate(messages, EndToEnd.timeIdem(Idem.builder().configYaml(yaml).env(Map.of())
                    .broker("activemq", adapter), "bench", messages));
        } finally {
            adapter.close();
        }
    }


    /** The adapter's defaults, with the broker URL. */
    private record UrlOnly(String url) implements PluginConfig {
        @Override
        public <T> T get(ConfigKey<T> key) {
            if (key.name().equals(ActiveMqBrokerAdapterProvider.URL.name())) {
                return key.javaType().cast(url);
            }
            return key.defaultValue();
        }

        @Override
        public String path() {
            return "broker.activemq";
        }
    }
}
