package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.TestPluginConfig;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.activemq.broker.BrokerPlugin;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.plugin.StatisticsBrokerPlugin;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * A persistent ActiveMQ broker for tests: KahaDB in a directory, one TCP connector on 127.0.0.1 (a free port
 * at the first start, the same port on every restart). Not thread-safe.
 */
final class TestBroker implements AutoCloseable {

    private static TestBroker shared;

    private final Path dataDirectory;
    private int port;
    private BrokerService broker;

    TestBroker(Path dataDirectory) {
        this.dataDirectory = dataDirectory;
    }

    /** One broker for every test class of the suite that needs no broker of its own; never stopped. */
    static synchronized TestBroker shared() {
        if (shared == null) {
            try {
                shared = new TestBroker(Files.createTempDirectory("idem-activemq-test"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            shared.start();
        }
        return shared;
    }

    void start() {
        BrokerService b = new BrokerService();
        try {
            b.setBrokerName("idem-test-" + System.nanoTime());
            b.setPersistent(true);
            b.setUseJmx(false);
            b.setUseShutdownHook(false);
            b.setAdvisorySupport(false);
            b.setPlugins(new BrokerPlugin[] {new StatisticsBrokerPlugin()});
            b.setDataDirectoryFile(dataDirectory.toFile());
            KahaDBPersistenceAdapter kahaDb = new KahaDBPersistenceAdapter();
            kahaDb.setDirectory(new File(dataDirectory.toFile(), "kahadb"));
            // Tests stop the broker gracefully, which flushes the journal; no fsync per message keeps them fast.
            kahaDb.setJournalDiskSyncStrategy("never");
            b.setPersistenceAdapter(kahaDb);
            b.addConnector("tcp://127.0.0.1:" + port);
            b.start();
            b.waitUntilStarted();
            port = b.getTransportConnectors().get(0).getConnectUri().getPort();
        } catch (Exception e) {
            throw new IllegalStateException("Could not start the test broker", e);
        }
        broker = b;
    }

    void stop() {
        try {
            broker.stop();
            broker.waitUntilStopped();
        } catch (Exception e) {
            throw new IllegalStateException("Could not stop the test broker", e);
        }
    }

    String tcpUrl() {
        return "tcp://127.0.0.1:" + port;
    }

    /** An adapter for this broker through the provider, with redelivery delays of zero. */
    BrokerAdapter adapter() {
        return adapter(config());
    }

    static BrokerAdapter adapter(TestPluginConfig config) {
        return new ActiveMqBrokerAdapterProvider().create(config);
    }

    TestPluginConfig config() {
        return defaults().with("url", tcpUrl()).with("redelivery.initial-delay", "0");
    }

    static TestPluginConfig defaults() {
        return TestPluginConfig.defaults("broker.activemq", new ActiveMqBrokerAdapterProvider().configSpec());
    }

    @Override
    public void close() {
        stop();
    }
}
