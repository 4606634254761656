package dev.idem.adapter.activemq;

import dev.idem.spi.BrokerException;
import java.io.File;
import java.io.IOException;
import org.apache.activemq.broker.BrokerPlugin;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.plugin.StatisticsBrokerPlugin;
import org.apache.activemq.store.SharedFileLocker;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An ActiveMQ broker inside this process ({@code embedded.enabled}): persistent (KahaDB) in a data directory,
 * reached through {@code vm://<broker-name>}, optionally listening for other processes. Not thread-safe:
 * started and stopped by the adapter that owns it.
 */
final class EmbeddedBroker {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedBroker.class);

    private final BrokerService broker;
    private final File dataDirectory;

    private EmbeddedBroker(BrokerService broker, File dataDirectory) {
        this.broker = broker;
        this.dataDirectory = dataDirectory;
    }

    /**
     * Starts the broker and waits until it runs.
     *
     * @param path the config path, for messages ({@code broker.activemq})
     * @throws BrokerException if it cannot start; in particular when another broker holds the data
     *         directory's lock (another Idem process on the same directory)
     */
    static EmbeddedBroker start(String name, File dataDirectory, String listen, String path) {
        BrokerService broker = new BrokerService();
        try {
            broker.setBrokerName(name);
            broker.setPersistent(true);
            broker.setUseJmx(false);
            broker.setUseShutdownHook(false);
            // Advisory messages serve tooling and dynamic networks, neither of which an embedded broker has.
            broker.setAdvisorySupport(false);
            // Answers the queue-size queries behind idem.backlog.
            broker.setPlugins(new BrokerPlugin[] {new StatisticsBrokerPlugin()});
            broker.setDataDirectoryFile(dataDirectory);
            broker.setTmpDataDirectory(new File(dataDirectory, "tmp"));
            KahaDBPersistenceAdapter kahaDb = new KahaDBPersistenceAdapter();
            kahaDb.setDirectory(new File(dataDirectory, "kahadb"));
            SharedFileLocker locker = new SharedFileLocker();
            locker.setFailIfLocked(true);
            kahaDb.setLocker(locker);
            broker.setPersistenceAdapter(kahaDb);
            if (listen != null) {
                broker.addConnector(listen);
            }
        } catch (Exception e) {
            throw new BrokerException("Cannot configure the embedded ActiveMQ broker (" + path + ".embedded.*): "
                    + e.getMessage(), false, e);
        }
        try {
            broker.start();
            if (!broker.waitUntilStarted(60_000) || !broker.isStarted()) {
                throw new IOException("it did not start within 60s");
            }
        } catch (Exception e) {
            stopQuietly(broker);
            throw startFailure(name, dataDirectory, listen, path, e);
        }
        log.info("Embedded ActiveMQ broker '{}' started (data in {}{})", name, dataDirectory.getAbsolutePath(),
                listen == null ? "" : ", listening on " + listen);
        return new EmbeddedBroker(broker, dataDirectory);
    }

    private static BrokerException startFailure(String name, File dir, String listen, String path, Exception e) {
        String detail = e.getMessage() == null ? e.toString() : e.getMessage();
        if (detail.contains("lock") || detail.contains("Lock")) {
            return new BrokerException("Cannot start the embedded ActiveMQ broker '" + name + "': its data "
                    + "directory " + dir.getAbsolutePath() + " (" + path + ".embedded.data-directory) is locked by "
                    + "another broker, probably another Idem process using the same directory. Stop that process, or "
                    + "give this one its own directory. (" + detail + ")", false, e);
        }
        return new BrokerException("Cannot start the embedded ActiveMQ broker '" + name + "' on data directory "
                + dir.getAbsolutePath() + (listen == null ? "" : " listening on " + listen + " (" + path
                + ".embedded.listen)") + ": " + detail, false, e);
    }

    File dataDirectory() {
        return dataDirectory;
    }

    /** Stops the broker; messages stay in the data directory for the next start. */
    void stop() {
        stopQuietly(broker);
        broker.waitUntilStopped();
        log.info("Embedded ActiveMQ broker '{}' stopped", broker.getBrokerName());
    }

    private static void stopQuietly(BrokerService broker) {
        try {
            broker.stop();
        } catch (Exception e) {
            log.warn("Stopping the embedded ActiveMQ broker '{}' failed: {}", broker.getBrokerName(), e.toString());
        }
    }
}
